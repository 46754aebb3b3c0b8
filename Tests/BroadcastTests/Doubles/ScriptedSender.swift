import Broadcast
import Kafka
import Synchronization

/// Sends are the records' values ("partition/offset"); each waits until the test answers it,
/// unless `auto` answers at once.
final class ScriptedSender: Sender, Sendable {
    private struct State {
        var waiting: [String: CheckedContinuation<PipelineEngine<String>.Outcome, Never>] = [:]
        var started: [String] = []
        var startWaiter: (count: Int, continuation: CheckedContinuation<Void, Never>)?
    }

    private let state = Mutex(State())
    private let auto: @Sendable (String) -> PipelineEngine<String>.Outcome?

    init(auto: @escaping @Sendable (String) -> PipelineEngine<String>.Outcome? = { _ in nil }) {
        self.auto = auto
    }

    func onAttemptFailed(_ listener: @escaping @Sendable (AttemptFailure) -> Void) {}
    func refreshMetrics() {}

    func deliver(_ send: String) async -> PipelineEngine<String>.Outcome {
        let woken = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.started.append(send)
            guard let w = s.startWaiter, s.started.count >= w.count else { return nil }
            s.startWaiter = nil
            return w.continuation
        }
        woken?.resume()
        if let outcome = auto(send) { return outcome }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let cancelled = state.withLock { s -> Bool in
                    if Task.isCancelled { return true }
                    s.waiting[send] = continuation
                    return false
                }
                if cancelled { continuation.resume(returning: .abandoned) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiting.removeValue(forKey: send) }
            waiter?.resume(returning: .abandoned)
        }
    }

    /// Answers a waiting send.
    func answer(_ send: String, _ outcome: PipelineEngine<String>.Outcome) {
        let waiter = state.withLock { $0.waiting.removeValue(forKey: send) }
        waiter?.resume(returning: outcome)
    }

    /// Waits until `count` sends have started in all.
    func waitForStarted(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { s -> Bool in
                if s.started.count >= count { return true }
                s.startWaiter = (count, continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    var started: [String] { state.withLock { $0.started } }
    var waiting: Set<String> { state.withLock { Set($0.waiting.keys) } }
}

/// Each record is one send: its value.
struct OneSendPerRecord: RecordPreparer {
    func prepare(_ message: KafkaMessage) -> PipelineEngine<String>.Work {
        .sends([String(decoding: message.value, as: UTF8.self)])
    }
}
