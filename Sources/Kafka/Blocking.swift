import Dispatch

/// Runs blocking librdkafka calls off Swift's cooperative thread pool (the ledger's reads too).
public enum Blocking {
    private static let queue = DispatchQueue(label: "hubcast.kafka.blocking", attributes: .concurrent)

    public static func run<T: Sendable>(
        _ body: @escaping @Sendable () throws(KafkaError) -> T
    ) async throws(KafkaError) -> T {
        let result: Result<T, KafkaError> = await withCheckedContinuation { continuation in
            queue.async {
                do throws(KafkaError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}

extension Blocking {
    static func runCatching<T: Sendable>(
        _ body: @escaping @Sendable () throws(KafkaError) -> T
    ) async -> Result<T, KafkaError> {
        do throws(KafkaError) { return .success(try await run(body)) } catch { return .failure(error) }
    }
}
