import Foundation
import HubEmulator
import Kafka
import Logging
import News
import NotificationHubs
import TestSupport
import Testing

/// A dev broker and an emulator as processes, plus helpers to feed and inspect a `hubcast run`.
final class PipelineHarness: Sendable {
    static let hub = "hubcast"
    let broker: DevBrokerProcess
    let emulator: ServerProcess
    let devices: Int
    let dlq: URL

    init(devices: Int = 1000, partitions: Int = 3, emulatorArguments: [String] = []) async throws {
        broker = try await DevBrokerProcess(partitions: partitions)
        emulator = try await ServerProcess(
            HubcastBinary.path,
            [
                "emulator", "--hub", Self.hub, "--devices", String(devices), "--sample-payloads", "1",
                "--log-level", "warning",
            ] + emulatorArguments
        )
        self.devices = devices
        dlq = FileManager.default.temporaryDirectory.appendingPathComponent("hubcast-dlq-\(UUID().uuidString).jsonl")
    }

    deinit {
        try? FileManager.default.removeItem(at: dlq)
    }

    var emulatorURL: String { Self.url(of: emulator) }

    /// A client of the emulator's hub, as an app backend registering devices would have.
    func hubClient() throws -> NotificationHubClient {
        var config = NotificationHubConfiguration(
            connection: try ConnectionString(parsing: emulator.firstLine),
            hubName: Self.hub
        )
        config.requestTimeout = .seconds(30)
        return NotificationHubClient(
            configuration: config,
            transport: CurlTransport(logger: Logger(label: "test")),
            logger: Logger(label: "test")
        )
    }

    /// How many simulated devices follow each category: the emulator's audience, recomputed.
    func followers() throws -> [String: Int] {
        try SimulatedAudience.populate(NotificationHubEmulator(), hub: "x", count: devices, seed: 1)
    }

    /// Publishes items `n` in `range`: item n has id "item-n", category seedNames[n % 6], headline "Headline n".
    func produce(
        _ range: Range<Int>,
        extra: [(topic: String, value: String)] = [],
        timestampMs: Int64? = nil
    ) async throws {
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(kafka: KafkaConfiguration(bootstrapServers: broker.bootstrap)),
            logger: KafkaTestKit.logger
        )
        let categories = try Categories()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in range {
                let category = Categories.seedNames[n % 6]
                let item = NewsItem(id: "item-\(n)", headline: "Headline \(n)", category: category)
                group.addTask {
                    _ = try await producer.send(
                        topic: categories.topic(for: category)!,
                        key: Array(item.id.utf8),
                        value: item.json
                    )
                }
            }
            for (topic, value) in extra {
                group.addTask {
                    _ = try await producer.send(topic: topic, value: Array(value.utf8), timestampMs: timestampMs)
                }
            }
            try await group.waitForAll()
        }
        try await producer.close()
    }

    /// `exitWhenIdle` nil: the run goes on until signalled (a test that produces more after a fault
    /// must not race the run's idle exit).
    func runArguments(_ extra: [String] = [], dlq sink: String? = nil, exitWhenIdle: Int? = 3) -> [String] {
        [
            "run", "--brokers", broker.bootstrap, "--hub", Self.hub, "--dlq", sink ?? "file:" + dlq.path,
            "--metrics-interval", "1",
            "--retry-base-ms", "10", "--retry-max-ms", "200",
        ] + (exitWhenIdle.map { ["--exit-when-idle", String($0)] } ?? []) + extra
    }

    var environment: [String: String] { ["HUBCAST_CONNECTION_STRING": emulator.firstLine] }

    /// Runs `hubcast run` until idle.
    func run(
        _ extra: [String] = [],
        dlq sink: String? = nil,
        timeout: Duration = .seconds(240)
    ) async throws -> HubcastBinary.Result {
        try await HubcastBinary.run(runArguments(extra, dlq: sink), environment: environment, timeout: timeout)
    }

    /// `hubcast replay` with this harness's broker and hub.
    func replay(_ arguments: [String], timeout: Duration = .seconds(240)) async throws -> HubcastBinary.Result {
        try await HubcastBinary.run(replayArguments(arguments), environment: environment, timeout: timeout)
    }

    func replayArguments(_ arguments: [String]) -> [String] {
        [
            "replay", "--brokers", broker.bootstrap, "--hub", Self.hub, "--retry-base-ms", "10", "--metrics-interval",
            "1",
        ] + arguments
    }

    /// Sends the emulator accepted so far.
    func acceptedSends() async throws -> Int { try await Self.acceptedSends(at: emulatorURL) }

    /// Sends the emulator at `url` (its base, ending in `/`) accepted so far.
    static func acceptedSends(at url: String) async throws -> Int {
        let result = try await ChildProcess.run("curl", ["-sf", url + "_emulator/stats"])
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        return (json?["statusCounts"] as? [String: Int])?["201"] ?? 0
    }

    /// The base URL of an emulator process, from the connection string it printed first.
    static func url(of emulator: ServerProcess) -> String {
        let port = emulator.firstLine.split(separator: ":").dropFirst(2).first?.split(separator: "/").first ?? ""
        return "http://127.0.0.1:\(port)/"
    }

    /// The emulator's count of answers it gave with status 500 (faults included).
    func acceptedSendsAndStatuses() async throws -> (accepted: Int, status500: Int) {
        let result = try await ChildProcess.run("curl", ["-sf", emulatorURL + "_emulator/stats"])
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let counts = json?["statusCounts"] as? [String: Int] ?? [:]
        return (counts["201"] ?? 0, counts["500"] ?? 0)
    }

    /// `hubcast run` started in the background, with its stdout and stderr captured.
    struct Background: Sendable {
        let process: Process
        let stdout: LineWatcher
        let stderr: LineWatcher

        /// Waits for the exit; returns the status and what the process printed.
        func finish() async -> HubcastBinary.Result {
            async let out = stdout.all()
            async let err = stderr.all()
            let (o, e) = await (out, err)
            return HubcastBinary.Result(status: process.reap(), stdout: o, stderr: e)
        }
    }

    func startRun(_ extra: [String] = [], exitWhenIdle: Int? = 3) throws -> Background {
        try start(runArguments(extra, exitWhenIdle: exitWhenIdle))
    }

    /// `hubcast replay` with this harness's broker and hub, in the background.
    func startReplay(_ arguments: [String]) throws -> Background {
        try start(replayArguments(arguments))
    }

    /// `hubcast` with these arguments in the background; `environment` nil: the harness's (its
    /// connection string).
    func start(_ arguments: [String], environment: [String: String]? = nil) throws -> Background {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: HubcastBinary.path)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment ?? self.environment) { $1 }
        let out = Pipe.unshared(), err = Pipe.unshared()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        return Background(
            process: process,
            stdout: LineWatcher(out.fileHandleForReading),
            stderr: LineWatcher(err.fileHandleForReading)
        )
    }

    /// Waits until the emulator has recorded at least `count` deliveries (or a minute passed).
    func waitForDeliveries(_ count: Int) async throws {
        _ = try await poll(every: .milliseconds(50), timeout: .seconds(120)) {
            try await deliveries().count >= count ? true : nil
        }
    }

    /// Waits until the emulator has recorded every item of `range` at least once (or two minutes
    /// passed); repeats do not count, as the count of `waitForDeliveries` does.
    func waitForEveryItem(_ range: Range<Int>) async throws {
        let expected = Set(range.map { "Headline \($0)" })
        _ = try await poll(every: .milliseconds(50), timeout: .seconds(120)) {
            expected.isSubset(of: Set(try await deliveries().map(\.headline))) ? true : nil
        }
    }

    /// Every delivery the emulator recorded: (headline of the first payload, tag expression, matched, time).
    func deliveries() async throws -> [(headline: String, tags: String, matched: Int, at: Double)] {
        try await deliveryRecords().map { record in
            let payload = (record["payloads"] as? [String])?.first ?? ""
            let headline = payload.components(separatedBy: " News : ").last?.components(separatedBy: "\"").first ?? ""
            return (
                headline, record["tagExpression"] as? String ?? "", record["matched"] as? Int ?? -1,
                record["at"] as? Double ?? 0
            )
        }
    }

    /// Every delivery the emulator recorded, as its `/_emulator/deliveries` writes it.
    func deliveryRecords() async throws -> [[String: Any]] {
        let result = try await ChildProcess.run("curl", ["-sf", emulatorURL + "_emulator/deliveries"])
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        return json?["deliveries"] as? [[String: Any]] ?? []
    }

    func faults(_ json: String) async throws {
        let result = try await ChildProcess.run(
            "curl",
            ["-sf", "-X", "POST", "--data", json, emulatorURL + "_emulator/faults"]
        )
        #expect(result.status == 0)
    }

    func clearFaults() async throws {
        _ = try await ChildProcess.run("curl", ["-sf", "-X", "DELETE", emulatorURL + "_emulator/faults"])
    }

    /// Dead-letter records in the --dlq file.
    func deadLetters() throws -> [[String: Any]] {
        guard let text = try? String(contentsOf: dlq, encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
        }
    }

    /// The group's committed offsets summed over the category topics.
    func committedTotal(group: String = "hubcast") async throws -> Int64 {
        let categories = try Categories()
        let partitions = categories.topics.flatMap { topic in
            (0..<3).map { TopicPartition(topic: topic, partition: Int32($0)) }
        }
        let consumer = try KafkaConsumer(
            configuration: KafkaTestKit.consumerConfiguration(
                broker.bootstrap,
                group: group,
                topics: categories.topics
            ),
            logger: KafkaTestKit.logger
        )
        return try await consumer.committed(partitions).values.reduce(0, +)
    }

    /// The parsed metrics lines of a run's stdout.
    static func metricsLines(_ stdout: String) throws -> [[String: Any]] {
        try stdout.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
        }
    }

    /// Checks every stdout line against schemas/metrics.schema.json (or `schema`) with the Python validator.
    static func validateMetrics(_ stdout: String, schema: String = "metrics.schema.json") async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let files = try stdout.split(separator: "\n").enumerated().map { i, line in
            let file = dir.appendingPathComponent("\(i).json")
            try String(line).write(to: file, atomically: true, encoding: .utf8)
            return file.path
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"
        let result = try await ChildProcess.run(
            python,
            [
                root.appendingPathComponent("schemas/validate.py").path,
                root.appendingPathComponent("schemas/\(schema)").path,
            ] + files
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains("invalid "), "\(result.stdout)")
        #expect(result.stdout.split(separator: "\n").count == files.count)
    }
}
