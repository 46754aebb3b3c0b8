import ArgumentParser
import Foundation
import Health
import HubEmulator
import Logging
import Metrics
import OperationsEndpoint
import ServiceLifecycle
import Telemetry

/// `hubcast emulator`: a local Notification Hubs for development, tests, the demo and benchmarks.
struct EmulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emulator",
        abstract: "Run a local Notification Hubs emulator (in memory, plain http on loopback).",
        discussion: """
            Prints its full-access connection string on the first stdout line and its listen-only one on the \
            second (fresh keys each start; they are for this loopback emulator only), then serves registrations, \
            installations and template/native sends as Notification Hubs does, with SAS checks. Inspect with \
            GET /_emulator/deliveries and /_emulator/stats; inject faults with POST /_emulator/faults. \
            Everything is kept in memory and lost at exit.
            """
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var http: HTTPOptions

    @Option(
        name: .long,
        help: ArgumentHelp("Address to listen on (env HUBCAST_EMULATOR_HOST; default 127.0.0.1).", valueName: "host")
    )
    var host: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Port to listen on; 0 picks a free one (env HUBCAST_EMULATOR_PORT; default 0).",
            valueName: "port"
        )
    )
    var port: Int?

    @Option(
        name: .customLong("hub"),
        help: ArgumentHelp(
            "A hub that exists (repeatable); without any, every hub name is created on first use.",
            valueName: "name"
        )
    )
    var hubs: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Simulated devices to pre-register, each with the breaking-news template, some category tags and a username tag (env HUBCAST_DEVICES; default 0).",
            valueName: "n"
        )
    )
    var devices: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Hub that receives the simulated devices (default: the first --hub, else hubcast).",
            valueName: "name"
        )
    )
    var devicesHub: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seed of the simulated audience: the same seed gives the same devices (default 1).",
            valueName: "n"
        )
    )
    var seed: UInt64 = 1

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Rendered payloads kept per notification for /_emulator/deliveries (env HUBCAST_SAMPLE_PAYLOADS; default 3).",
            valueName: "n"
        )
    )
    var samplePayloads: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Notifications kept in the delivery log (env HUBCAST_KEEP_DELIVERIES; default 100000).",
            valueName: "n"
        )
    )
    var keepDeliveries: Int?

    @Option(
        name: .customLong("fault"),
        help: ArgumentHelp(
            "A fault active from the start, as JSON, e.g. '{\"status\":429,\"rate\":0.3,\"retryAfter\":1}' (repeatable).",
            valueName: "json"
        )
    )
    var faults: [String] = []

    func run() async throws {
        let settings = try await common.settings()
        let logger = try common.bootstrapLogging(settings, label: "hubcast.emulator")
        let endpoint = try http.endpoint(settings, logger: logger)
        // The delivery log's counters (sends by status, devices reached) for /metrics, before it exists.
        let prometheus = PrometheusMetrics()
        if endpoint != nil { MetricsSystem.bootstrap(prometheus.factory) }
        var config = NotificationHubEmulator.Configuration()
        config.hubs = hubs
        config.samplePayloads = try settings.int(samplePayloads, "sample-payloads", default: 3, range: 0...1000)
        config.keepDeliveries = try settings.int(
            keepDeliveries,
            "keep-deliveries",
            default: 100_000,
            range: 1...10_000_000
        )
        let emulator = NotificationHubEmulator(configuration: config)
        for text in faults {
            guard let fault = try? JSONDecoder().decode(Fault.self, from: Data(text.utf8)) else {
                throw CLIError.usage("--fault: not a fault object: \(text)")
            }
            emulator.faults.add(fault)
        }
        let deviceCount = try settings.int(devices, "devices", default: 0, range: 0...10_000_000)
        let audienceHub = devicesHub ?? hubs.first ?? "hubcast"
        if deviceCount > 0 {
            guard hubs.isEmpty || hubs.contains(audienceHub) else {
                throw CLIError.usage("--devices-hub: \(audienceHub) is not one of the --hub names")
            }
            let followers = try SimulatedAudience.populate(emulator, hub: audienceHub, count: deviceCount, seed: seed)
            logger.info(
                "Simulated audience registered",
                metadata: [
                    "hub": "\(audienceHub)", "devices": "\(deviceCount)",
                    "followers": "\(followers.sorted { $0.key < $1.key })",
                ]
            )
        }
        let host = settings.string(self.host, "emulator-host", default: "127.0.0.1")
        let port = try settings.int(self.port, "emulator-port", default: 0, range: 0...65535)
        let policy = config.policy
        let server = EmulatorServer(emulator: emulator, host: host, port: port, logger: logger) { bound in
            let full =
                policy.connectionString(keyName: "DefaultFullSharedAccessSignature", host: host, port: bound) ?? ""
            let listen =
                policy.connectionString(keyName: "DefaultListenSharedAccessSignature", host: host, port: bound) ?? ""
            FileHandle.standardOutput.write(Data("\(full)\n\(listen)\n".utf8))
            logger.info(
                "Notification Hubs emulator running (in memory; state is lost at exit)",
                metadata: ["url": "http://\(host):\(bound)/"]
            )
        }
        var services: [any Service] = [server]
        if let endpoint {
            services.append(
                OperationsServer(
                    health: .serverOnly(),
                    host: endpoint.host,
                    port: endpoint.port,
                    logger: logger,
                    exposition: prometheus.exposition
                )
            )
        }
        let group = ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await group.run()
    }
}
