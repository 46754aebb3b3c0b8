import ArgumentParser
import Foundation
import Kafka
import NotificationHubs
import TextFormats

/// How to reach Kafka: shared by every command that consumes or produces.
struct KafkaOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Bootstrap servers, host:port[,host:port…] (env HUBCAST_BROKERS; default 127.0.0.1:9092).",
            valueName: "list"
        )
    )
    var brokers: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (env HUBCAST_SECURITY_PROTOCOL; default PLAINTEXT).",
            valueName: "protocol"
        )
    )
    var securityProtocol: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "SASL mechanism, e.g. PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (env HUBCAST_SASL_MECHANISM; default PLAIN).",
            valueName: "name"
        )
    )
    var saslMechanism: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "SASL user name (env HUBCAST_SASL_USERNAME). The password comes from HUBCAST_SASL_PASSWORD or --sasl-password-file.",
            valueName: "name"
        )
    )
    var saslUsername: String?

    @Option(
        name: .long,
        help: ArgumentHelp("File holding the SASL password (env HUBCAST_SASL_PASSWORD_FILE).", valueName: "path")
    )
    var saslPasswordFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp("CA bundle for SSL/SASL_SSL (env HUBCAST_KAFKA_CA_FILE).", valueName: "path")
    )
    var kafkaCaFile: String?

    @Option(
        name: .customLong("kafka-property"),
        help: ArgumentHelp(
            "Any librdkafka property, key=value; repeatable; wins over the settings above.",
            valueName: "key=value"
        )
    )
    var kafkaProperties: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds to wait for a broker at start-up before exiting with code 3 (env HUBCAST_CONNECT_TIMEOUT; default 10).",
            valueName: "seconds"
        )
    )
    var connectTimeout: Int?

    func configuration(_ settings: Settings) throws(CLIError) -> KafkaConfiguration {
        var config = KafkaConfiguration(
            bootstrapServers: settings.string(brokers, "brokers", default: "127.0.0.1:9092")
        )
        let protocolName = settings.string(securityProtocol, "security-protocol", default: "PLAINTEXT").uppercased()
        guard let proto = KafkaConfiguration.SecurityProtocol(rawValue: protocolName) else {
            throw .usage(
                "--security-protocol: \(LegibleText.quoted(protocolName)) is not one of \(KafkaConfiguration.SecurityProtocol.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        config.securityProtocol = proto
        if let user = settings.string(saslUsername, "sasl-username") {
            guard
                let password = try settings.secret(
                    "sasl-password",
                    fileFlag: saslPasswordFile,
                    fileName: "sasl-password-file"
                )
            else {
                throw .usage(
                    "--sasl-username is set but no password: set HUBCAST_SASL_PASSWORD or --sasl-password-file"
                )
            }
            config.sasl = .init(
                mechanism: settings.string(saslMechanism, "sasl-mechanism", default: "PLAIN"),
                username: user,
                password: password
            )
        }
        config.caFile = settings.string(kafkaCaFile, "kafka-ca-file")
        for property in kafkaProperties {
            guard let eq = property.firstIndex(of: "="), eq != property.startIndex else {
                throw .usage("--kafka-property: expected key=value, got \(LegibleText.quoted(property.prefix(60)))")
            }
            config.properties[String(property[..<eq])] = String(property[property.index(after: eq)...])
        }
        // Now, not at connect time: a bad broker list or a missing file is a setting to fix (exit 2),
        // not an unreachable cluster (exit 3 after the connect timeout).
        do {
            try config.validate()
        } catch {
            throw .usage(
                "\(Self.setting(for: error.property, in: config)): \(LegibleText.quoted(error.value)) \(LegibleText.sanitized(error.problem))"
            )
        }
        return config
    }

    /// The option that set a librdkafka property: its own flag unless --kafka-property overrode it.
    private static func setting(for property: String, in config: KafkaConfiguration) -> String {
        switch property {
        case _ where config.properties[property] != nil: "--kafka-property \(property)"
        case "bootstrap.servers": "--brokers"
        case "ssl.ca.location": "--kafka-ca-file"
        default: "--kafka-property \(property)"
        }
    }

    func timeout(_ settings: Settings) throws(CLIError) -> Duration {
        .seconds(try settings.int(connectTimeout, "connect-timeout", default: 10, range: 1...600))
    }
}

/// Which categories exist and which topic each is on.
struct CategoryOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Topic name prefix; a category's topic is <prefix><category lowercased> (env HUBCAST_TOPIC_PREFIX; default news.).",
            valueName: "prefix"
        )
    )
    var topicPrefix: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Comma-separated categories (env HUBCAST_CATEGORIES; default World,Politics,Business,Technology,Science,Sports).",
            valueName: "list"
        )
    )
    var categories: String?

    @Option(
        name: .customLong("topic-map"),
        help: ArgumentHelp(
            "Give a category a topic of its own, Category=topic; repeatable (env HUBCAST_TOPIC_MAP, comma-separated).",
            valueName: "Category=topic"
        )
    )
    var topicMap: [String] = []
}
