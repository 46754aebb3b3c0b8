import Foundation
import Logging
import Synchronization
import Threads

/// Publishes messages and awaits each one's delivery report.
public final class KafkaProducer: Sendable {
    private let client: RDKafkaClient
    private let closed = Shared(false)
    // The handle must outlive the thread serving rd_kafka_poll (its delivery-report callbacks):
    // close joins that thread before the handle can go.
    private let pollThread = JoinableThread(name: "kafka-producer")

    public init(configuration: KafkaProducerConfiguration, logger: Logger) throws(KafkaError) {
        client = try RDKafkaClient(role: .producer, properties: configuration.librdkafkaProperties, logger: logger)
        let started = pollThread.start { [client, closed] in
            // Delivery reports are served here, so senders never block a Swift thread.
            while !closed.withLock({ $0 }) { client.servePoll(timeoutMs: 100) }
        }
        guard started else { throw .configuration("the system refused the Kafka producer a thread") }
    }

    deinit {
        markClosed()
        pollThread.join()
    }

    /// Ends the poll thread's loop (at its next poll, within 100 ms).
    private func markClosed() { closed.withLock { $0 = true } }

    /// Proves a broker answers before the producer is relied on.
    public func checkReachable(timeout: Duration) async throws(KafkaError) {
        let client = self.client
        let ms = timeout.timeoutMs
        try await Blocking.run { () throws(KafkaError) in try client.checkReachable(timeoutMs: ms) }
    }

    /// Number of partitions of `topic`, or nil when the cluster does not have it.
    public func partitionCount(topic: String, timeout: Duration = .seconds(10)) async throws(KafkaError) -> Int? {
        let client = self.client
        let ms = timeout.timeoutMs
        return try await Blocking.run { () throws(KafkaError) in try client.partitionCount(topic: topic, timeoutMs: ms)
        }
    }

    /// Sends one message and returns once the broker has it (or librdkafka gave up). `timestampMs`
    /// (milliseconds since the epoch): the message's create time; nil: now.
    public func send(
        topic: String,
        partition: Int32? = nil,
        key: [UInt8]? = nil,
        value: [UInt8],
        headers: [KafkaHeader] = [],
        timestampMs: Int64? = nil
    ) async throws -> DeliveryReport {
        while true {
            do {
                return try await withCheckedThrowingContinuation { continuation in
                    do throws(KafkaError) {
                        try produce(topic, partition, key, value, headers, timestampMs) {
                            continuation.resume(with: $0.mapError { $0 as any Error })
                        }
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            } catch let error as KafkaError where error.isQueueFull {
                // librdkafka's queue is full: wait for deliveries to make room rather than fail.
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    /// Hands one message to librdkafka and returns at once; the message is batched with others
    /// (`linger.ms`). `delivered` is called on the producer's thread once the broker has it or
    /// librdkafka gave up, and never when this throws (a full queue, a closed producer); with no
    /// `delivered`, nobody hears how it went. For callers that must not spend a task on the wait
    /// (the delivered-sends ledger).
    public func enqueue(
        topic: String,
        partition: Int32?,
        key: [UInt8],
        value: [UInt8],
        delivered: (@Sendable (Result<DeliveryReport, KafkaError>) -> Void)? = nil
    ) throws(KafkaError) {
        try produce(topic, partition, key, value, [], nil, delivered)
    }

    private func produce(
        _ topic: String,
        _ partition: Int32?,
        _ key: [UInt8]?,
        _ value: [UInt8],
        _ headers: [KafkaHeader],
        _ timestampMs: Int64?,
        _ delivered: DeliveryBox.Completion?
    ) throws(KafkaError) {
        guard !closed.withLock({ $0 }) else { throw KafkaError.shutDown }
        let client = self.client
        let produced: Result<Void, KafkaError> = value.withUnsafeBytes { bytes in
            Result { () throws(KafkaError) in
                try client.produce(
                    topic: topic,
                    partition: partition,
                    key: key,
                    value: bytes,
                    headers: headers,
                    timestampMs: timestampMs,
                    delivered: delivered
                )
            }
        }
        try produced.get()
    }

    /// Waits up to `timeout` for every message handed over so far to be delivered. Blocks: for a
    /// thread that may block (a rebalance callback), never a task.
    public func flushBlocking(timeout: Duration) throws(KafkaError) {
        guard !closed.withLock({ $0 }) else { return }
        try client.flush(timeoutMs: timeout.timeoutMs)
    }

    /// Waits for outstanding deliveries (up to `timeout`), then stops the producer. What is still
    /// undelivered is given up, and whoever waits for it hears so.
    public func close(timeout: Duration = .seconds(30)) async throws(KafkaError) {
        guard !closed.withLock({ $0 }) else { return }
        let client = self.client
        let ms = timeout.timeoutMs
        let result: Result<Void, KafkaError> = await Blocking.runCatching { () throws(KafkaError) in
            defer { client.purgeUndelivered() }
            try client.flush(timeoutMs: ms)
        }
        markClosed()
        let pollThread = self.pollThread
        _ = await Blocking.runCatching { () throws(KafkaError) in pollThread.join() }
        try result.get()
    }
}
