import Kafka
import Logging

/// Helpers for driving the real Kafka module against a real dev broker.
public enum KafkaTestKit {
    public static let logger: Logger = {
        var logger = Logger(label: "hubcast.tests")
        logger.logLevel = .warning
        return logger
    }()

    public static func consumerConfiguration(
        _ bootstrap: String,
        group: String,
        topics: [String]
    ) -> KafkaConsumerConfiguration {
        var config = KafkaConsumerConfiguration(
            kafka: KafkaConfiguration(bootstrapServers: bootstrap),
            groupID: group,
            topics: topics
        )
        // Quicker group joins on the mock cluster; real clusters keep their defaults.
        config.kafka.properties["topic.metadata.refresh.interval.ms"] = "1000"
        return config
    }

    /// Publishes `count` messages with keys and values "0"… "count-1", spread over the partitions by key.
    public static func produce(_ count: Int, topic: String, bootstrap: String, from start: Int = 0) async throws {
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(kafka: KafkaConfiguration(bootstrapServers: bootstrap)),
            logger: logger
        )
        try await withThrowingTaskGroup(of: DeliveryReport.self) { group in
            for i in start..<(start + count) {
                group.addTask {
                    try await producer.send(topic: topic, key: Array("k\(i)".utf8), value: Array("\(i)".utf8))
                }
            }
            try await group.waitForAll()
        }
        try await producer.close()
    }

    /// Runs the consumer's poll loop around `body`, then stops it and waits for it to leave the group.
    public static func withRunning<T: Sendable>(
        _ consumer: KafkaConsumer,
        _ body: @Sendable (KafkaConsumer.Messages) async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await consumer.run()
                return nil
            }
            let result: T
            do {
                result = try await body(consumer.messages)
            } catch {
                consumer.stop()
                throw error
            }
            consumer.stop()
            try await group.waitForAll()
            return result
        }
    }

    /// Takes messages until `count` arrived or `timeout` passed.
    public static func take(
        _ count: Int,
        from messages: KafkaConsumer.Messages,
        timeout: Duration = .seconds(60)
    ) async -> [KafkaMessage] {
        // Past the timeout the taker is cancelled, its iteration ends, and it gives what it took.
        await guarded(timeout: timeout) {
            var taken: [KafkaMessage] = []
            var iterator = messages.makeAsyncIterator()
            while taken.count < count, let m = await iterator.next() { taken.append(m) }
            return taken
        }
    }

    /// The next offset to commit per partition for a set of processed messages.
    public static func nextOffsets(_ messages: [KafkaMessage]) -> [TopicPartitionOffset] {
        var next: [TopicPartition: Int64] = [:]
        for m in messages { next[m.topicPartition] = max(next[m.topicPartition] ?? 0, m.offset + 1) }
        return next.map { TopicPartitionOffset($0.key, offset: $0.value) }
    }
}
