import ArgumentParser
import Demo
import Foundation
import Metrics
import Telemetry

/// `hubcast demo`: everything on loopback, end to end, then a summary.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the whole pipeline on loopback (dev broker, emulator, sample news) and print a summary.",
        discussion: """
            Starts an in-memory Kafka broker and the Notification Hubs emulator in this process on free loopback \
            ports, registers a simulated audience, publishes breaking news for every category (plus one invalid \
            and one expired item), runs the pipeline until the topics are drained and prints what was delivered. \
            Exits 0 only if every valid item was delivered. Nothing leaves the machine.
            """
    )

    @OptionGroup var common: CommonOptions

    @Option(name: .long, help: ArgumentHelp("Simulated devices in the emulator (default 10000).", valueName: "n"))
    var devices: Int = 10_000

    func run() async throws {
        let settings = try await common.settings()
        var logLevelOptions = common
        if logLevelOptions.logLevel == nil && settings.string(nil, "log-level") == nil {
            logLevelOptions.logLevel = "warning"
        }
        let logger = try logLevelOptions.bootstrapLogging(settings, label: "hubcast.demo")
        guard (1...1_000_000).contains(devices) else {
            throw CLIError.usage("--devices must be between 1 and 1000000, got \(devices)")
        }
        let metrics = InMemoryMetrics()
        MetricsSystem.bootstrap(metrics)
        var configuration = DemoRunner.Configuration()
        configuration.devices = devices
        let summary = try await DemoRunner(configuration: configuration, logger: logger).run(metrics: metrics)
        print(summary.text)
        if !summary.allDelivered { throw ExitCode.failure }
    }
}
