import Foundation
import Kafka

/// Where undeliverable sends go. A write returns only once the record is safely stored.
public protocol DeadLetterSink: Sendable {
    func write(_ record: DeadLetterRecord) async throws
    /// Makes everything written durable (fsync, producer flush).
    func flush() async throws
}

/// A Kafka topic (default `news.deadletter`), keyed by item id; a write awaits its delivery report.
public struct KafkaDeadLetterSink: DeadLetterSink {
    let producer: KafkaProducer
    let topic: String

    public init(producer: KafkaProducer, topic: String) {
        self.producer = producer
        self.topic = topic
    }

    public func write(_ record: DeadLetterRecord) async throws {
        _ = try await producer.send(
            topic: topic,
            key: record.itemID.map { Array($0.utf8) },
            value: record.json,
            headers: [KafkaHeader(name: "hubcast-reason", value: Array(record.reason.utf8))]
        )
    }

    public func flush() async throws {}
}

/// An append-only JSON-lines file, created with mode 0600; `flush` fsyncs it. The write(2) and
/// fsync(2) calls run on a queue of the sink's own, never on Swift's cooperative threads.
public final class FileDeadLetterSink: DeadLetterSink {
    private let fd: Int32
    // Serial: lines from concurrent senders never interleave.
    private let queue = DispatchQueue(label: "hubcast.dead-letter-file")
    public let path: String

    public init(path: String) throws {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path]) }
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    public func write(_ record: DeadLetterRecord) async throws {
        let line = record.json + [0x0A]
        try await onQueue { fd in
            let written = line.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
            guard written == line.count else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        }
    }

    public func flush() async throws {
        try await onQueue { fd in
            guard fsync(fd) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        }
    }

    private func onQueue(_ body: @escaping @Sendable (Int32) throws -> Void) async throws {
        let fd = self.fd
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.async {
                do {
                    try body(fd)
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
