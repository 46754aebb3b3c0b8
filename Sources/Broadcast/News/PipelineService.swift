import Kafka
import Logging
import News
import NotificationHubs

/// The news pipeline as `run` and `demo` both wire it: one concurrency policy, one dead-letter
/// path, one sender per hub. The CLI only parses settings and passes them here.
public enum PipelineService {
    public typealias NewsPipeline = Pipeline<NewsPreparer, HubRouter, ContinuousClock>

    /// A hub the pipeline sends to.
    public struct Hub: Sendable {
        /// Its name in logs, metrics and dead letters (routes name hubs by it).
        public var name: String
        public var configuration: NotificationHubConfiguration
        /// Its known quota in sends per second; nil: the pipeline's `maxRate`.
        public var maxRate: Double?

        public init(name: String, configuration: NotificationHubConfiguration, maxRate: Double? = nil) {
            self.name = name
            self.configuration = configuration
            self.maxRate = maxRate
        }
    }

    /// The consumer's settings for the pipeline: a few batches buffered, the categories taking
    /// turns in them (librdkafka's queue ahead of them is kept short).
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

    /// A sender per hub over one libcurl transport, with one connection per send in flight
    /// (fewer would queue inside libcurl), within half of the usual 1,024 open files. The hubs
    /// share the sends remembered as delivered (an item goes to one hub) and the ledger (its
    /// records name their hub).
    public static func sender(
        hubs: [Hub],
        transport: TransportConfiguration,
        configuration: PipelineConfiguration,
        ledger: (any DeliveryLedger)? = nil,
        metrics: PipelineMetrics,
        logger: Logger
    ) -> HubRouter {
        var transport = transport
        transport.maxConnectionsPerHost = min(configuration.concurrency * hubs.count, 512)
        transport.keptResponseHeaders = NotificationHubClient.sendResponseHeaders
        let curl = CurlTransport(configuration: transport, logger: logger)
        let delivered = DeliveredSends(window: configuration.dedupeWindow)
        return HubRouter(
            hubs.enumerated().map { number, hub in
                HubSender(
                    configuration: hub.configuration,
                    transport: curl,
                    delivered: delivered,
                    ledger: ledger,
                    metrics: metrics,
                    logger: logger,
                    hub: number,
                    hubName: hubs.count > 1 ? hub.name : nil,
                    targets: configuration.targets,
                    recordsBehindLimit: configuration.recordsBehind
                )
            }
        )
    }

    public static func pipeline(
        source: any RecordSource,
        sender: HubRouter,
        routes: HubRoutes = .single("hub"),
        maxRates: [Double?] = [],
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
            canary: canary,
            routes: routes
        )
        var observer = observer
        if let canary {
            sender.attach(canary)
            let toldAvailable = observer.hubAvailable, toldUnavailable = observer.hubUnavailable
            // The canary goes through the first hub: only its state concerns it.
            let first = routes.hubs[0]
            observer.hubAvailable = {
                toldAvailable($0)
                if $0 == first { canary.hubAvailable() }
            }
            observer.hubUnavailable = {
                toldUnavailable($0, $1)
                if $0 == first { canary.hubUnavailable() }
            }
        }
        return Pipeline(
            source: source,
            preparer: preparer,
            sender: sender,
            deadLetters: deadLetters,
            quota: quota,
            configuration: shell(configuration, hubs: routes.hubs, maxRates: maxRates),
            metrics: metrics,
            observer: observer,
            logger: logger,
            clock: ContinuousClock()
        )
    }

    /// `maxRates`: each hub's known quota by number, where it differs from `c.maxRate`.
    static func shell(
        _ c: PipelineConfiguration,
        hubs: [String] = [],
        maxRates: [Double?] = []
    ) -> NewsPipeline.Configuration {
        var shell = NewsPipeline.Configuration()
        shell.hubNames = hubs
        shell.engine.maxInFlight = c.concurrency
        shell.engine.pacing.maxRate = c.maxRate
        shell.engine.paceHubs(count: hubs.count, maxRates: maxRates)
        shell.engine.batchSize = c.batchSize
        // The engine's own queue: deep enough for the lanes to pause a partition at a quota, which
        // the batches (small, so a breaking item waits for little ahead of it) do not set.
        shell.engine.maxQueued = max(1000, c.batchSize * 2, c.concurrency * 2)
        shell.engine.commitInterval = c.commitInterval
        shell.engine.drainTimeout = c.drainTimeout
        shell.engine.revokeTimeout = min(c.revokeTimeout, c.drainTimeout)
        shell.engine.probeInterval = c.outageRetryInterval
        shell.engine.stopWhenIdle = c.stopWhenIdle
        return shell
    }
}

extension KafkaConsumer: RecordSource {
    public func takeReady(max: Int) -> [KafkaMessage] { messages.takeReady(max: max) }

    public func nextBatch(max: Int, timeout: Duration) async -> SourceBatch {
        switch await messages.nextBatch(max: max, timeout: timeout) {
        case .batch(let messages): .records(messages)
        case .timedOut: .timedOut
        case .finished: .finished
        }
    }
}
