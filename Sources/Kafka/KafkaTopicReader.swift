import Foundation
import Logging

/// Reads partitions of a topic from their first message to their end as it was when the read
/// began, outside any consumer group (nothing is committed). For state kept in a compacted topic
/// and read back when needed, such as the delivered-sends ledger. Blocks: call it from a thread of
/// its own or a poll thread, never from a task.
public struct KafkaTopicReader: Sendable {
    public let kafka: KafkaConfiguration
    public let logger: Logger

    public init(kafka: KafkaConfiguration, logger: Logger) {
        self.kafka = kafka
        self.logger = logger
    }

    /// Calls `visit` with every message of `partitions` of `topic`, in order within each partition,
    /// up to each one's end when the read began. Throws when the cluster does not answer within
    /// `timeout` (for the watermarks, then for the messages); returns how many were read.
    @discardableResult
    public func read(
        topic: String,
        partitions: [Int32],
        timeout: Duration,
        visit: (KafkaMessage) -> Void
    ) throws(KafkaError) -> Int {
        let client = try makeClient()
        defer { close(client) }
        let deadline = ContinuousClock.now + timeout
        var remaining: [Int32: Int64] = [:]  // partition → the offset its last message has
        var starts: [TopicPartitionOffset] = []
        for partition in partitions {
            let tp = TopicPartition(topic: topic, partition: partition)
            let marks = try client.watermarks(tp, timeoutMs: timeout.timeoutMs)
            guard marks.high > marks.low else { continue }
            remaining[partition] = marks.high - 1
            starts.append(TopicPartitionOffset(tp, offset: marks.low))
        }
        guard !starts.isEmpty else { return 0 }
        try client.assign(starts)
        var count = 0
        while !remaining.isEmpty {
            guard ContinuousClock.now < deadline else {
                throw .unreachable(
                    "\(topic) was not read to its end within \(timeout): partitions \(remaining.keys.sorted()) unfinished"
                )
            }
            switch client.poll(timeoutMs: 100) {
            case .nothing: continue
            case .endOfPartition(let tp):
                // Its last messages were compacted or deleted while it was read.
                remaining[tp.partition] = nil
            case .error(let error):
                logger.debug("Reading a topic to its end", metadata: ["topic": "\(topic)", "error": "\(error)"])
            case .message(let message):
                count += 1
                visit(message)
                if let last = remaining[message.partition], message.offset >= last {
                    remaining[message.partition] = nil
                }
            }
        }
        return count
    }

    private func makeClient() throws(KafkaError) -> RDKafkaClient {
        var properties = kafka.librdkafkaProperties
        // A consumer handle needs a group id even for assigned partitions; this one never joins a
        // group nor commits.
        properties["group.id"] = "hubcast-reader-\(UUID().uuidString)"
        properties["enable.auto.commit"] = "false"
        properties["enable.auto.offset.store"] = "false"
        properties["auto.offset.reset"] = "earliest"
        properties["enable.partition.eof"] = "true"
        return try RDKafkaClient(role: .consumer, properties: properties, logger: logger)
    }

    private func close(_ client: RDKafkaClient) {
        client.consumerClose()
        client.destroy()
    }
}
