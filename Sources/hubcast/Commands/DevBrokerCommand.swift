import ArgumentParser
import Broadcast
import Foundation
import Kafka
import ServiceLifecycle

/// `hubcast dev-broker`: an in-memory Kafka cluster on loopback for development and tests.
struct DevBrokerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev-broker",
        abstract: "Run an in-memory Kafka broker on loopback (librdkafka's mock cluster) for development and tests.",
        discussion: """
            Prints its bootstrap address as the first line on stdout, creates the category topics, the quota topic, the \
            canary topic and the dead-letter topic, and runs until SIGINT or SIGTERM. Everything is kept in memory and lost at exit: \
            never point production traffic at it.
            """
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var categories: CategoryOptions

    @Option(
        name: .long,
        help: ArgumentHelp("Partitions of each created topic (env HUBCAST_PARTITIONS; default 3).", valueName: "n")
    )
    var partitions: Int?

    @Option(
        name: .long,
        help: ArgumentHelp("Brokers in the mock cluster (env HUBCAST_BROKER_COUNT; default 1).", valueName: "n")
    )
    var brokerCount: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Dead-letter topic to create (env HUBCAST_DLQ_TOPIC; default news.deadletter).",
            valueName: "topic"
        )
    )
    var dlqTopic: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Also accept bootstrap connections on 127.0.0.1:<port>; 0 or absent means only the broker's own port (env HUBCAST_PORT).",
            valueName: "port"
        )
    )
    var port: Int?

    func run() async throws {
        let settings = try await common.settings()
        let logger = try common.bootstrapLogging(settings, label: "hubcast.dev-broker")
        let partitionCount = try settings.int(partitions, "partitions", default: 3, range: 1...1000)
        let brokers = try settings.int(brokerCount, "broker-count", default: 1, range: 1...9)
        let fixedPort = try settings.int(port, "port", default: 0, range: 0...65535)
        let categoryMap = try categories.resolve(settings)
        var topics = Dictionary(uniqueKeysWithValues: categoryMap.topics.map { ($0, partitionCount) })
        topics[settings.string(dlqTopic, "dlq-topic", default: "news.deadletter")] = partitionCount
        // Where `run` instances share a hub's quota (a few reports a second: one partition).
        topics[QuotaSharing.defaultTopic] = 1
        // The delivered-sends ledger: as many partitions as a news topic, so each takeover reads a part.
        topics[KafkaDeliveryLedger.defaultTopic] = partitionCount
        // Canary requests and results: one partition, so one instance of a group sends them.
        topics[Canary.defaultTopic] = 1

        let broker: DevBroker
        do {
            broker = try DevBroker(brokers: brokers, topics: topics, logger: logger)
        } catch {
            throw CLIError.failure("dev-broker could not start: \(error)")
        }
        var relay: TCPRelay?
        var address = broker.bootstrapServers
        if fixedPort != 0 {
            do {
                relay = try TCPRelay(listenPort: UInt16(fixedPort), target: broker.bootstrapServers, logger: logger)
            } catch {
                throw CLIError.failure("dev-broker could not listen on 127.0.0.1:\(fixedPort): \(error)")
            }
            address = "127.0.0.1:\(fixedPort)"
        }
        // The first stdout line is the contract; write it unbuffered so a parent process sees it at once.
        FileHandle.standardOutput.write(Data("\(address)\n".utf8))
        logger.info(
            "Dev broker running (in memory; data is lost at exit)",
            metadata: [
                "bootstrap": "\(address)", "topics": "\(topics.keys.sorted())", "partitions": "\(partitionCount)",
            ]
        )
        let service = WaitForShutdown()
        let group = ServiceGroup(services: [service], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await group.run()
        relay?.stop()
        withExtendedLifetime(broker) {}
        logger.info("Dev broker stopped")
    }
}

/// A service that only waits for the signal to shut down.
struct WaitForShutdown: Service {
    func run() async throws {
        try? await gracefulShutdown()
    }
}
