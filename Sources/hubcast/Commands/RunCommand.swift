import ArgumentParser
import Broadcast
import Foundation
import Health
import Kafka
import Logging
import Metrics
import NotificationHubs
import OperationsEndpoint
import ServiceLifecycle
import Synchronization
import Telemetry

/// `hubcast run`: the pipeline.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Consume news items from Kafka and broadcast each as a template notification.",
        discussion: """
            Consumes the category topics in a consumer group, validates each item (invalid ones go to the \
            dead-letter sink, expired ones are counted and skipped), turns it into one or more template sends \
            and runs them through a bounded worker pool paced to the hub's quota (with --routes, to each item's hub, each \
            paced and held on its own). Offsets are committed only below items that \
            are completely done (at-least-once). When the hub itself fails (credentials refused, TLS, no answer) \
            sends are held and consumption pauses until a probe succeeds; nothing is dead-lettered for it. Metrics: one \
            JSON object per --metrics-interval on stdout and a final one at exit (with the canary on, also one line \
            per canary); logs on stderr. SIGTERM/SIGINT: stop \
            consuming, drain for at most --drain-timeout, commit, exit 0; a second signal finishes at once (finished \
            work still committed).
            """
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var kafka: KafkaOptions
    @OptionGroup var categoryOptions: CategoryOptions
    @OptionGroup var hubOptions: HubOptions
    @OptionGroup var routesOption: RoutesOption
    @OptionGroup var pipelineOptions: PipelineOptions
    @OptionGroup var canaryOptions: CanaryOptions
    @OptionGroup var http: HTTPOptions
    @OptionGroup var legacyPrometheus: LegacyPrometheusOptions

    @Flag(
        name: .long,
        help:
            "Skip the start-up check of the hub credentials (for a key without Listen rights) (env HUBCAST_SKIP_HUB_CHECK)."
    )
    var skipHubCheck = false

    func run() async throws {
        let settings = try await common.settings()
        let logger = try common.bootstrapLogging(settings, label: "hubcast.run")
        let categories = try categoryOptions.resolve(settings)
        let kafkaConfig = try kafka.configuration(settings)
        let (hubs, routes, hubTransport) = try routesOption.hubs(
            settings,
            hubOptions: hubOptions,
            categories: categories.names
        )
        let hubConfig = hubs[0].configuration
        var pipelineConfig = try pipelineOptions.configuration(settings, categories: categories)
        let quotaTopic = try pipelineOptions.quota.topic(settings)
        let instance = QuotaSharing.uniqueInstance()
        let canaryConfig = try canaryOptions.configuration(
            settings,
            instance: instance,
            group: pipelineOptions.groupID(settings)
        )
        if let canaryConfig {
            guard categories.category(forTopic: canaryConfig.topic) == nil else {
                throw CLIError.usage(
                    "--canary-topic: \(canaryConfig.topic) is a category's topic; the canary needs a topic of its own"
                )
            }
            pipelineConfig.canaryTopic = canaryConfig.topic
        }
        let timeout = try kafka.timeout(settings)
        let endpoint = try http.endpoint(settings, legacy: legacyPrometheus, logger: logger)

        let metrics = InMemoryMetrics()
        let prometheus = PrometheusMetrics()
        // Prometheus records only when it is scraped: without --http-port, a send pays for one back end.
        MetricsSystem.bootstrap(
            endpoint == nil ? metrics : MultiplexMetricsHandler(factories: [metrics, prometheus.factory])
        )
        let pipelineMetrics = PipelineMetrics(categories: categories.names, hubs: routes.hubs)
        let consumer: KafkaConsumer
        do {
            consumer = try KafkaConsumer(
                configuration: PipelineService.consumerConfiguration(
                    kafka: kafkaConfig,
                    groupID: pipelineOptions.groupID(settings),
                    configuration: pipelineConfig
                ),
                logger: logger
            )
        } catch {
            throw CLIError.usage("Kafka configuration: \(error)")
        }
        do {
            try await consumer.checkReachable(timeout: timeout)
        } catch {
            throw CLIError.unreachable("could not reach Kafka at \(kafkaConfig.bootstrapServers): \(error)")
        }
        let ledger = try await LedgerOption.open(
            topic: try pipelineOptions.ledger.topic(settings),
            kafka: kafkaConfig,
            hubs: hubs.map(\.configuration.resourceURI),
            window: pipelineConfig.dedupeWindow,
            logger: logger
        )
        let sender = PipelineService.sender(
            hubs: hubs,
            transport: hubTransport,
            configuration: pipelineConfig,
            ledger: ledger,
            metrics: pipelineMetrics,
            logger: logger
        )
        if !(try settings.bool(skipHubCheck, "skip-hub-check")) {
            for (hub, named) in zip(sender.hubs, hubs) {
                try await HubCheck.verify(hub.client, timeout: timeout, name: hubs.count > 1 ? named.name : nil)
            }
        }

        let (deadLetters, dlqProducer) = try pipelineOptions.deadLetterSink(
            settings,
            kafka: kafkaConfig,
            logger: logger
        )
        var healthConfig = HealthState.Configuration(consumes: true)
        healthConfig.dependencies = ["kafka"]
        healthConfig.hubs = routes.hubs
        let health = HealthMonitor(configuration: healthConfig, pollTurns: { consumer.pollCount })
        let shared = try QuotaTopicOption.sharing(
            topic: quotaTopic,
            kafka: kafkaConfig,
            instance: instance,
            hubs: hubs.map(\.configuration),
            logger: logger
        )
        let quotaExchange = shared?.exchange
        let quota = shared?.sharing
        var canary: Canary?
        var canaryProducer: KafkaProducer?
        if let canaryConfig {
            let producer = try await CanaryTopicOption.producer(
                for: canaryConfig.topic,
                kafka: kafkaConfig,
                timeout: timeout,
                logger: logger
            )
            canaryProducer = producer
            var telemetryConfig = hubConfig
            telemetryConfig.retry.maxAttempts = 1
            let telemetry = NotificationHubClient(
                configuration: telemetryConfig,
                transport: CurlTransport(configuration: hubTransport, logger: logger),
                logger: logger
            )
            canary = Canary(
                configuration: canaryConfig,
                seams: .live(topic: canaryConfig.topic, producer: producer, consumer: consumer, client: telemetry),
                logger: logger
            )
        }
        let pipeline = PipelineService.pipeline(
            source: ledger.map { LedgeredSource(health.watching(consumer), ledger: $0, delivered: sender.delivered) }
                ?? health.watching(consumer),
            sender: sender,
            routes: routes,
            maxRates: hubs.map(\.maxRate),
            deadLetters: health.watching(deadLetters),
            quota: quota,
            canary: canary,
            configuration: pipelineConfig,
            metrics: pipelineMetrics,
            observer: health.pipelineObserver,
            logger: logger
        )

        let printer = MetricsPrinter(
            metrics: metrics,
            interval: try pipelineOptions.interval(settings),
            hubs: routes.hubs.count > 1 ? routes.hubs : []
        )
        var extra: [ServiceGroupConfiguration.ServiceConfiguration] = []
        // Before the pipeline in the group, so it stops after it: the pipeline's leaving report goes out.
        if let quotaExchange { extra.append(.init(service: quotaExchange)) }
        // Likewise: the results of canaries the pipeline finishes while it drains are still written.
        if let canary { extra.append(.init(service: canary)) }
        if let endpoint {
            // Ready means connected to Kafka: a broker must answer a metadata request (every 5 s).
            extra.append(
                .init(
                    service: PingWatch(
                        ping: {
                            do throws(KafkaError) {
                                try await consumer.checkReachable(timeout: .seconds(3))
                                return nil
                            } catch {
                                return error.description
                            }
                        },
                        report: health.watching("kafka")
                    )
                )
            )
            extra.append(
                .init(
                    service: OperationsServer(
                        health: health,
                        host: endpoint.host,
                        port: endpoint.port,
                        logger: logger,
                        exposition: prometheus.exposition
                    )
                )
            )
        }
        let started = ContinuousClock.now
        // Shut down in reverse: the pipeline drains and commits, then the consumer leaves its group,
        // then the printer stops; the final metrics line comes after all of them.
        var groupConfig = ServiceGroupConfiguration(
            services: extra + [
                .init(service: printer),
                .init(service: consumer),
                .init(service: pipeline, successTerminationBehavior: .gracefullyShutdownGroup),
            ],
            logger: logger
        )
        // The engine bounds the drain itself; this is the backstop should anything else hang.
        groupConfig.maximumGracefulShutdownDuration = pipelineConfig.drainTimeout + .seconds(10)
        let group = ServiceGroup(configuration: groupConfig)
        // The producers close however the group ended: the ledger may hold the records of sends
        // that already ended, which a restart would otherwise repeat.
        var failure: (any Error)?
        do {
            try await ShutdownSignals.run(
                group,
                firstSignal: { [canary] in canary?.stopAsking() },
                secondSignal: { pipeline.requestShutdown() },
                logger: logger
            )
        } catch {
            failure = error
        }
        try? await dlqProducer?.close()
        try? await canaryProducer?.close(timeout: .seconds(5))
        await ledger?.close()
        if let failure { throw failure }
        printer.printFinal(elapsed: ContinuousClock.now - started)
    }
}

/// The start-up check that the hub accepts our credentials, with a cheap authenticated read.
enum HubCheck {
    /// `name`: the hub's name in the routes file, when there are several.
    static func verify(_ client: NotificationHubClient, timeout: Duration, name: String? = nil) async throws {
        let which = name.map { "hub \($0) (\(client.configuration.hubName))" } ?? "hub"
        do {
            _ = try await client.registration(id: "hubcast-start-up-check")
        } catch {
            switch (error.status, error.reason) {
            case (404, _), (200, _):
                return
            case (401, _), (403, _):
                throw CLIError.usage(
                    "the \(which) refused the credentials (HTTP \(error.status ?? 0)): \(error.message); check the connection string and "
                        + (name == nil ? "--hub" : "the routes file")
                )
            case (nil, _):
                throw CLIError.unreachable(
                    "could not reach the \(which) at \(client.configuration.connection.baseURL): \(error.message)"
                )
            default:
                throw CLIError.unreachable(
                    "the \(which) answered HTTP \(error.status ?? 0) at start-up: \(error.message)"
                )
            }
        }
    }
}
