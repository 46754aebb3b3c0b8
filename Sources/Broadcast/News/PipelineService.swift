import Kafka
import Logging
import News
import NotificationHubs

/// The news pipeline as `run` and `demo` both wire it: one concurrency policy, one dead-letter
/// path, one sender. The CLI only parses settings and passes them here.
public enum PipelineService {
    public typealias NewsPipeline = Pipeline<NewsPreparer, HubSender, ContinuousClock>

    /// The consumer's settings for the pipeline: a few batches buffered (librdkafka's own queue
    /// is the deep buffer).
    public static func consumerConfiguration(
        kafka: KafkaConfiguration,
        groupID: String,
        configuration: PipelineConfiguration
    ) -> KafkaConsumerConfiguration {
        var consumer = KafkaConsumerConfiguration(
            kafka: kafka,
            groupID: groupID,
            topics: configuration.categories.topics + (configuration.canaryTopic.map { [$0] } ?? [])
        )
        consumer.bufferCapacity = max(configuration.batchSize * 4, 2000)
        consumer.fetchWaitMaxMs = configuration.fetchWaitMs
        return consumer
    }

    /// The hub sender with one connection per send in flight (fewer would queue inside libcurl),
    /// within half of the usual 1,024 open files; over HTTP/2 the sends share a few connections.
    public static func sender(
        hub: NotificationHubConfiguration,
        transport: TransportConfiguration,
        configuration: PipelineConfiguration,
        ledger: (any DeliveryLedger)? = nil,
        metrics: PipelineMetrics,
        logger: Logger
    ) -> HubSender {
        var transport = transport
        transport.maxConnectionsPerHost = min(configuration.concurrency, 512)
        transport.keptResponseHeaders = NotificationHubClient.sendResponseHeaders
        return HubSender(
            configuration: hub,
            transport: CurlTransport(configuration: transport, logger: logger),
            delivered: DeliveredSends(window: configuration.dedupeWindow),
            ledger: ledger,
            metrics: metrics,
            logger: logger,
            targets: configuration.targets
        )
    }

    public static func pipeline(
        source: any RecordSource,
        sender: HubSender,
        deadLetters: any DeadLetterSink,
        quota: QuotaSharing? = nil,
        canary: Canary? = nil,
        configuration: PipelineConfiguration,
        metrics: PipelineMetrics,
        observer: PipelineObserver = PipelineObserver(),
        logger: Logger
    ) -> NewsPipeline {
        let preparer = NewsPreparer(
            categories: configuration.categories,
            maxMessageBytes: configuration.maxMessageBytes,
            delivered: sender.delivered,
            metrics: metrics,
            logger: logger,
            categoryPriority: configuration.categoryPriority,
            maxAge: configuration.maxAge,
            canary: canary
        )
        var observer = observer
        if let canary {
            sender.attach(canary)
            let toldAvailable = observer.hubAvailable, toldUnavailable = observer.hubUnavailable
            observer.hubAvailable = {
                toldAvailable()
                canary.hubAvailable()
            }
            observer.hubUnavailable = {
                toldUnavailable($0)
                canary.hubUnavailable()
            }
        }
        return Pipeline(
            source: source,
            preparer: preparer,
            sender: sender,
            deadLetters: deadLetters,
            quota: quota,
            configuration: shell(configuration),
            metrics: metrics,
            observer: observer,
            logger: logger,
            clock: ContinuousClock()
        )
    }

    static func shell(_ c: PipelineConfiguration) -> NewsPipeline.Configuration {
        var shell = NewsPipeline.Configuration()
        shell.engine.maxInFlight = c.concurrency
        shell.engine.pacing.maxRate = c.maxRate
        shell.engine.batchSize = c.batchSize
        shell.engine.maxQueued = max(c.batchSize * 2, c.concurrency * 2)
        shell.engine.commitInterval = c.commitInterval
        shell.engine.drainTimeout = c.drainTimeout
        shell.engine.revokeTimeout = min(c.revokeTimeout, c.drainTimeout)
        shell.engine.probeInterval = c.outageRetryInterval
        shell.engine.stopWhenIdle = c.stopWhenIdle
        return shell
    }
}

extension KafkaConsumer: RecordSource {
    public func nextBatch(max: Int, timeout: Duration) async -> SourceBatch {
        switch await messages.nextBatch(max: max, timeout: timeout) {
        case .batch(let messages): .records(messages)
        case .timedOut: .timedOut
        case .finished: .finished
        }
    }
}
