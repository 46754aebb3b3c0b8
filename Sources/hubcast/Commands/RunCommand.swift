import ArgumentParser
import Broadcast
import Foundation
import Kafka
import Logging
import Metrics
import NotificationHubs
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
            and runs them through a bounded, adaptive worker pool. Offsets are committed only below items that \
            are completely done (at-least-once). Metrics: one JSON object per --metrics-interval on stdout and a \
            final one at exit; logs on stderr. SIGTERM/SIGINT: stop consuming, drain, commit, exit 0.
            """
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var kafka: KafkaOptions
    @OptionGroup var categoryOptions: CategoryOptions
    @OptionGroup var hubOptions: HubOptions
    @OptionGroup var pipelineOptions: PipelineOptions

    @Flag(name: .long, help: "Skip the start-up check of the hub credentials (for a key without Listen rights).")
    var skipHubCheck = false

    func run() async throws {
        let settings = try common.settings()
        let logger = try common.bootstrapLogging(settings, label: "hubcast.run")
        let categories = try categoryOptions.resolve(settings)
        let kafkaConfig = try kafka.configuration(settings)
        let (hubConfig, hubTransport) = try hubOptions.configuration(settings)
        let pipelineConfig = try pipelineOptions.configuration(settings, categories: categories)
        var transportConfig = hubTransport
        // One connection per send in flight (fewer would queue inside libcurl), within half of the
        // usual 1,024 open files; over HTTP/2 the sends share a few connections anyway.
        transportConfig.maxConnectionsPerHost = min(pipelineConfig.concurrency, 512)
        let timeout = try kafka.timeout(settings)

        let metrics = InMemoryMetrics()
        MetricsSystem.bootstrap(metrics)
        let pipelineMetrics = PipelineMetrics(categories: categories.names)
        let gateBox = Mutex<Pipeline?>(nil)
        var consumerConfig = KafkaConsumerConfiguration(kafka: kafkaConfig, groupID: pipelineOptions.groupID(settings), topics: categories.topics)
        // A few batches: librdkafka's own queue (queued.min.messages) is the deep buffer.
        consumerConfig.bufferCapacity = max(pipelineConfig.batchSize * 4, 2000)
        let consumer: KafkaConsumer
        do {
            consumer = try KafkaConsumer(configuration: consumerConfig, handlers: Pipeline.rebalanceHandlers { gateBox.withLock { $0 } }, logger: logger)
        } catch {
            throw CLIError.usage("Kafka configuration: \(error)")
        }
        do {
            try await consumer.checkReachable(timeout: timeout)
        } catch {
            throw CLIError.unreachable("could not reach Kafka at \(kafkaConfig.bootstrapServers): \(error)")
        }
        let throttleSignal = Mutex<(@Sendable () -> Void)?>(nil)
        let client = NotificationHubClient(
            configuration: hubConfig, transport: CurlTransport(configuration: transportConfig, logger: logger), logger: logger,
            attemptFailed: { reason in
                if reason == .throttled || reason == .serverError { throttleSignal.withLock { $0 }?() }
            })
        if !skipHubCheck { try await HubCheck.verify(client, timeout: timeout) }

        let (deadLetters, dlqProducer) = try pipelineOptions.deadLetterSink(settings, kafka: kafkaConfig, logger: logger)
        let pipeline = Pipeline(consumer: consumer, client: client, deadLetters: deadLetters, configuration: pipelineConfig,
                                metrics: pipelineMetrics, logger: logger)
        gateBox.withLock { $0 = pipeline }
        throttleSignal.withLock { $0 = { pipeline.throttled() } }

        let printer = MetricsPrinter(metrics: metrics, interval: try pipelineOptions.interval(settings))
        var extra: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let endpoint = try pipelineOptions.prometheus(settings) {
            extra.append(.init(service: PrometheusServer(metrics: metrics, host: endpoint.host, port: endpoint.port, logger: logger)))
        }
        let started = ContinuousClock.now
        // Shut down in reverse: the pipeline drains and commits, then the consumer leaves its group,
        // then the printer stops; the final metrics line comes after all of them.
        let group = ServiceGroup(configuration: .init(
            services: extra + [
                .init(service: printer),
                .init(service: consumer),
                .init(service: pipeline, successTerminationBehavior: .gracefullyShutdownGroup),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        try? await dlqProducer?.close()
        printer.printFinal(elapsed: ContinuousClock.now - started)
    }
}

/// The start-up check that the hub accepts our credentials, with a cheap authenticated read.
enum HubCheck {
    static func verify(_ client: NotificationHubClient, timeout: Duration) async throws {
        do {
            _ = try await client.registration(id: "hubcast-start-up-check")
        } catch {
            switch (error.status, error.reason) {
            case (404, _), (200, _):
                return
            case (401, _), (403, _):
                throw CLIError.usage("the hub refused the credentials (HTTP \(error.status ?? 0)): \(error.message); check the connection string and --hub")
            case (nil, _):
                throw CLIError.unreachable("could not reach the hub at \(client.configuration.connection.baseURL): \(error.message)")
            default:
                throw CLIError.unreachable("the hub answered HTTP \(error.status ?? 0) at start-up: \(error.message)")
            }
        }
    }
}
