import Broadcast
import Foundation
import HubEmulator
import Kafka
import Logging
import Metrics
import News
import Newsroom
import NotificationHubs
import Telemetry

/// Runs the whole product on loopback: a dev broker, the emulator with a simulated audience, the
/// demo news published, and the pipeline until the topics are drained.
public struct DemoRunner: Sendable {
    /// Demo settings.
    public struct Configuration: Sendable {
        public var devices = 10_000
        public var partitions = 3
        public var concurrency = 32
        public init() {}
    }

    let configuration: Configuration
    let logger: Logger
    /// 50 items a second, the pace the latency goal is set at.
    static let publishInterval: Duration = .milliseconds(20)

    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Runs the demo and returns what happened; `metrics` must be the bootstrapped back end.
    public func run(metrics: InMemoryMetrics) async throws -> DemoSummary {
        let categories = try Categories()
        // Kafka: in memory, in this process.
        var topics = Dictionary(uniqueKeysWithValues: categories.topics.map { ($0, configuration.partitions) })
        topics["news.deadletter"] = configuration.partitions
        let broker = try DevBroker(topics: topics, logger: logger)

        // Notification Hubs: the emulator on a free loopback port, with the simulated audience.
        let emulator = NotificationHubEmulator()
        let followers = try SimulatedAudience.populate(emulator, hub: "hubcast", count: configuration.devices, seed: 1)
        let (ports, portReady) = AsyncStream<Int>.makeStream()
        // The server's own shutdown chatter is not the demo's business.
        var quiet = logger
        quiet.logLevel = .critical
        let server = EmulatorServer(emulator: emulator, port: 0, logger: quiet) { portReady.yield($0) }
        let serverTask = Task { try await server.run() }
        defer { serverTask.cancel() }
        var portIterator = ports.makeAsyncIterator()
        guard let port = await portIterator.next(), port > 0 else { throw DemoError("the emulator did not start") }

        let kafka = KafkaConfiguration(bootstrapServers: broker.bootstrapServers)
        // Breaking news goes out at once: no producer linger in the end-to-end figure.
        var producerConfig = KafkaProducerConfiguration(kafka: kafka)
        producerConfig.lingerMs = 0
        let producer = try KafkaProducer(configuration: producerConfig, logger: logger)
        let (messages, newsroomItems) = DemoNews.messages(categories: categories)
        // As a long-running newsroom publisher has: the figures are not each topic's first look-up.
        _ = try await NewsPublisher(producer: producer, categories: categories).prepareTopics()
        var valid = newsroomItems
        valid["(users)", default: 0] += DemoBackendStep.items

        // The pipeline, exactly as `hubcast run` wires it.
        let connection = try ConnectionString(
            parsing: emulator.configuration.policy.connectionString(
                keyName: "DefaultFullSharedAccessSignature",
                host: "127.0.0.1",
                port: port
            ) ?? ""
        )
        var pipelineConfig = PipelineConfiguration(categories: categories)
        pipelineConfig.concurrency = configuration.concurrency
        pipelineConfig.stopWhenIdle = .seconds(2)
        let consumerConfig = PipelineService.consumerConfiguration(
            kafka: kafka,
            groupID: "hubcast-demo",
            configuration: pipelineConfig
        )
        let consumer = try KafkaConsumer(configuration: consumerConfig, logger: logger)
        let pipelineMetrics = PipelineMetrics(categories: categories.names)
        let sender = PipelineService.sender(
            hubs: [
                PipelineService.Hub(
                    name: "hubcast",
                    configuration: NotificationHubConfiguration(connection: connection, hubName: "hubcast")
                )
            ],
            transport: TransportConfiguration(),
            configuration: pipelineConfig,
            metrics: pipelineMetrics,
            logger: logger
        )
        let pipeline = PipelineService.pipeline(
            source: consumer,
            sender: sender,
            deadLetters: KafkaDeadLetterSink(producer: producer, topic: "news.deadletter"),
            configuration: pipelineConfig,
            metrics: pipelineMetrics,
            logger: logger
        )
        // The app backend (seeds 001–003) on the same broker and hub, on a SQLite file of its own.
        let backendDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hubcast-demo-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: backendDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: backendDirectory) }
        let backendHub = NotificationHubClient(
            configuration: NotificationHubConfiguration(connection: connection, hubName: "hubcast"),
            transport: CurlTransport(logger: quiet),
            logger: quiet
        )
        let (backend, backendTask) = try await DemoBackendStep.start(
            directory: backendDirectory,
            publisher: NewsPublisher(producer: producer, categories: categories),
            hub: backendHub,
            logger: quiet
        )
        defer { backendTask.cancel() }
        let backendOutcome = BackendOutcomeBox()
        let backendLogger = quiet
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await consumer.run() }
            // The newsroom publishes while hubcast runs, as it would in production.
            group.addTask {
                while consumer.assignment.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
                try await withThrowingTaskGroup(of: Void.self) { steps in
                    // A reader uses the backend meanwhile: register, a personal push, a secure one.
                    steps.addTask { await backendOutcome.set(backend.run(logger: backendLogger)) }
                    // The first item pays for the consumer's start-up (its first fetch); the summary's
                    // latency is the steady state after it: the rest arrive as a newsroom sends them.
                    guard let first = messages.first else { return }
                    _ = try await producer.send(topic: first.topic, value: first.value)
                    while metrics.snapshot(resettingIntervals: false).counter("hubcast_sent") == 0 {
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    _ = metrics.snapshot(resettingIntervals: true)
                    for message in messages.dropFirst() {
                        _ = try await producer.send(topic: message.topic, value: message.value)
                        try await Task.sleep(for: Self.publishInterval)
                    }
                    try await steps.waitForAll()
                }
            }
            try await pipeline.run()
            consumer.stop()
            try await group.waitForAll()
        }
        let elapsed = ContinuousClock.now - started
        try await producer.close()
        return DemoSummary(
            brokers: broker.bootstrapServers,
            emulatorURL: "http://127.0.0.1:\(port)/",
            devices: configuration.devices,
            followers: followers,
            validItems: valid,
            backend: await backendOutcome.value,
            deliveries: emulator.deliveries(),
            metrics: metrics.snapshot(resettingIntervals: false),
            elapsed: elapsed
        )
    }
}

/// The backend step's outcome, handed from its task to the summary.
actor BackendOutcomeBox {
    var value = DemoBackendStep.Outcome()
    func set(_ outcome: DemoBackendStep.Outcome) { value = outcome }
}

struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
