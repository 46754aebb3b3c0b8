import Foundation
import Kafka
import Logging
import ServiceLifecycle
import Synchronization

/// Carries `QuotaReport`s between the instances sending to one hub through a Kafka topic: the
/// cluster they already share, so no new server. Each instance writes its reports keyed by hub
/// and instance (a compacted topic keeps one per key) and reads everyone's from the end, through
/// a consumer group of its own (every instance must see every partition). What it missed while
/// away does not matter: reports go out four times a second.
public final class KafkaQuotaExchange: QuotaExchange, Service {
    private let producer: KafkaProducer
    private let consumer: KafkaConsumer
    private let topic: String
    private let outbox: AsyncStream<QuotaReport>
    private let outboxWriter: AsyncStream<QuotaReport>.Continuation
    private let handler = Mutex<(@Sendable (QuotaReport) -> Void)?>(nil)
    private let logger: Logger

    public init(kafka: KafkaConfiguration, topic: String, instance: String, logger: Logger) throws(KafkaError) {
        self.topic = topic
        self.logger = logger
        var producerConfiguration = KafkaProducerConfiguration(kafka: kafka)
        // A report is stale in a second: not worth the wait for every replica, nor a retry.
        producerConfiguration.messageTimeoutMs = 2000
        producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)
        var consumerConfiguration = KafkaConsumerConfiguration(
            kafka: kafka,
            groupID: "hubcast-quota-" + instance,
            topics: [topic]
        )
        consumerConfiguration.offsetReset = .latest
        consumerConfiguration.bufferCapacity = 1000
        // Not the news consumer's 3 ms: an idle instance would ask 333 times a second for a few
        // reports a second (on a real broker this is only how often it asks; on the dev broker
        // it adds up to 50 ms to a report, a fifth of the reporting interval).
        consumerConfiguration.fetchWaitMaxMs = 50
        // Its group's assignments and revokes are not the news partitions': at info they would read
        // as the pipeline's own rebalances. Below info (debug, trace) they stay.
        var consumerLogger = logger
        if consumerLogger.logLevel >= .info { consumerLogger.logLevel = max(consumerLogger.logLevel, .warning) }
        consumer = try KafkaConsumer(configuration: consumerConfiguration, logger: consumerLogger)
        // Only the newest reports matter: a slow broker drops the older ones, not the process.
        (outbox, outboxWriter) = AsyncStream.makeStream(of: QuotaReport.self, bufferingPolicy: .bufferingNewest(4))
    }

    public func onReport(_ handler: @escaping @Sendable (QuotaReport) -> Void) {
        self.handler.withLock { $0 = handler }
    }

    public func publish(_ report: QuotaReport) {
        outboxWriter.yield(report)
    }

    /// Sends what is published and reads what the others publish until shut down; the last
    /// report (a leaving one, from the pipeline's finish) goes out before the producer closes.
    public func run() async throws {
        let consumer = self.consumer
        let (firstDelivery, firstDelivered) = AsyncStream.makeStream(of: Bool.self)
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.send(firstDelivered: firstDelivered) }
                group.addTask {
                    // The first report creates the topic where the cluster creates topics on
                    // first use; where it cannot be delivered, there is nothing to read.
                    var delivery = firstDelivery.makeAsyncIterator()
                    guard await delivery.next() == true else { return }
                    async let polling: Void = { try? await consumer.run() }()
                    let decoder = JSONDecoder()
                    for await message in consumer.messages {
                        guard let report = try? decoder.decode(QuotaReport.self, from: Data(message.value)) else {
                            continue
                        }
                        self.handler.withLock { $0 }?(report)
                    }
                    await polling
                }
            }
        } onGracefulShutdown: {
            self.outboxWriter.finish()
            consumer.stop()
        }
    }

    private func send(firstDelivered: AsyncStream<Bool>.Continuation) async {
        let encoder = JSONEncoder()
        var first = true
        for await report in outbox {
            guard let value = try? encoder.encode(report) else { continue }
            do {
                _ = try await producer.send(
                    topic: topic,
                    key: Array("\(report.hub)/\(report.instance)".utf8),
                    value: Array(value)
                )
                if first { firstDelivered.yield(true) }
            } catch {
                if first {
                    logger.warning(
                        "The quota topic cannot be written (the cluster does not have it and did not create it): this instance paces the hub alone",
                        metadata: ["topic": "\(topic)", "error": "\(error)"]
                    )
                    firstDelivered.yield(false)
                } else {
                    logger.debug("A quota report was not delivered", metadata: ["error": "\(error)"])
                }
            }
            first = false
        }
        firstDelivered.finish()
        try? await producer.close(timeout: .seconds(2))
    }
}
