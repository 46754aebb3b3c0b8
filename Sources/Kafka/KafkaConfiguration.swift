import Foundation

/// Connection settings shared by consumers and producers, rendered to librdkafka properties.
public struct KafkaConfiguration: Sendable {
    /// How the client talks to the brokers (librdkafka's `security.protocol`).
    public enum SecurityProtocol: String, Sendable, CaseIterable {
        case plaintext = "PLAINTEXT"
        case ssl = "SSL"
        case saslPlaintext = "SASL_PLAINTEXT"
        case saslSSL = "SASL_SSL"
    }

    /// SASL credentials; the password never appears in `description`.
    public struct SASL: Sendable, CustomStringConvertible {
        public var mechanism: String
        public var username: String
        public var password: String

        public init(mechanism: String = "PLAIN", username: String, password: String) {
            self.mechanism = mechanism
            self.username = username
            self.password = password
        }

        public var description: String { "SASL(\(mechanism), user: \(username), password: <redacted>)" }
    }

    /// Comma-separated `host:port` list.
    public var bootstrapServers: String
    public var securityProtocol: SecurityProtocol = .plaintext
    public var sasl: SASL?
    /// Certificate authority bundle for SSL/SASL_SSL (`ssl.ca.location`).
    public var caFile: String?
    public var clientID: String = "hubcast"
    /// Any other librdkafka property; applied last, so it overrides the typed settings.
    public var properties: [String: String] = [:]

    public init(bootstrapServers: String) {
        self.bootstrapServers = bootstrapServers
    }

    var librdkafkaProperties: [String: String] {
        var p: [String: String] = [
            "bootstrap.servers": bootstrapServers,
            "security.protocol": securityProtocol.rawValue.lowercased(),
            "client.id": clientID,
            // librdkafka logs through a callback we route to swift-log, never to stderr directly.
            "log.queue": "false",
        ]
        if let sasl {
            p["sasl.mechanisms"] = sasl.mechanism
            p["sasl.username"] = sasl.username
            p["sasl.password"] = sasl.password
        }
        if let caFile { p["ssl.ca.location"] = caFile }
        p.merge(properties) { _, passedThrough in passedThrough }
        return p
    }

    /// Properties whose values must never be printed.
    static let secretProperties: Set<String> = [
        "sasl.password", "ssl.key.password", "ssl.keystore.password", "sasl.oauthbearer.client.secret",
    ]
}

/// Settings of a consumer in a consumer group; offsets are only ever committed explicitly.
public struct KafkaConsumerConfiguration: Sendable {
    /// Where a partition with no committed offset starts.
    public enum OffsetReset: String, Sendable {
        case earliest, latest
    }

    public var kafka: KafkaConfiguration
    public var groupID: String
    /// Topics to subscribe to; an entry starting with `^` is a regular expression.
    public var topics: [String]
    public var offsetReset: OffsetReset = .earliest
    /// How long the group waits for a member that stopped heartbeating: the broker's least by
    /// default (`group.min.session.timeout.ms`). A crashed instance's partitions wait this long for
    /// a new owner, and Tansu hands a leaving one's on only after half of it (a SIGTERMed
    /// instance's partitions reached the others 3 s after it left, against 5.5 s at 10 s). The
    /// heartbeat runs on librdkafka's own thread, which a busy send path does not hold up.
    public var sessionTimeoutMs: Int = 6_000
    /// How often a member asks the coordinator whether the group rebalances: a Kafka broker
    /// starts one at a leaving member's LeaveGroup, and the others join it at their next
    /// heartbeat, so this bounds how long a stopped instance's partitions wait (librdkafka's
    /// default is 3 s). One small request a second per consumer.
    public var heartbeatIntervalMs: Int = 1_000
    public var maxPollIntervalMs: Int = 300_000
    /// How long a fetch waits at the broker for data. A Kafka broker answers as soon as data
    /// arrives, so there this only sets how often an idle consumer asks (333 times a second per
    /// broker at 3 ms, a load a broker does not notice); the dev broker (librdkafka's mock)
    /// answers only at the deadline, so there it is the latency. Measured on the dev broker at
    /// 50 items/s, end-to-end p50/p99: 51/109 ms at 100 ms, 5.0/7.9 ms at 5, 2.6/3.3 ms at 1.
    public var fetchWaitMaxMs: Int = 3
    /// Messages held for the application; when it is full the poll loop waits.
    public var bufferCapacity: Int = 10_000
    /// How long a full buffer may hold the poll loop before the partitions are paused instead.
    public var pauseAfter: Duration = .seconds(1)

    public init(kafka: KafkaConfiguration, groupID: String, topics: [String]) {
        self.kafka = kafka
        self.groupID = groupID
        self.topics = topics
    }

    var librdkafkaProperties: [String: String] {
        var p = kafka.librdkafkaProperties
        let typed: [String: String] = [
            "group.id": groupID,
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
            "auto.offset.reset": offsetReset.rawValue,
            "session.timeout.ms": String(sessionTimeoutMs),
            "heartbeat.interval.ms": String(heartbeatIntervalMs),
            "max.poll.interval.ms": String(maxPollIntervalMs),
            "fetch.wait.max.ms": String(fetchWaitMaxMs),
            // What librdkafka prefetches for each partition, in the partition's own queue (the
            // consumer takes the partitions in turn; `PartitionQueues`), plus up to a fetch answer.
            // Measured unthrottled over 36 partitions against 500: the same sends/s or more, 6 MiB
            // less peak RSS. A queue it stops at is looked at again only when its broker connection
            // has something else to do, which a quiet partition's fetches give it; the consumer
            // wakes the fetchers once the fullest has drained to half (`FetchWake`) when there is none.
            "queued.min.messages": "100",
            // The same queue in bytes (default 64 MiB), reached first by large items; each
            // partition's, so 36 hold at most about 10 MiB with their fetch answers.
            "queued.max.messages.kbytes": "256",
            // Fetch answers are held in memory until their last message is freed, and each adds a
            // partition's worth to its queue at once; a record batch larger than this still comes whole.
            "max.partition.fetch.bytes": "16384",
        ]
        // Pass-through properties still win, except the two that would break at-least-once.
        p.merge(typed) { passedThrough, typed in passedThrough }
        // A session timeout passed through shorter than three heartbeats leaves no room for a
        // late or lost one: the heartbeat follows it unless it was passed through too.
        if kafka.properties["heartbeat.interval.ms"] == nil,
            let session = kafka.properties["session.timeout.ms"].flatMap(Int.init), session > 0,
            session < 3 * heartbeatIntervalMs
        {
            p["heartbeat.interval.ms"] = String(max(1, session / 3))
        }
        p["enable.auto.commit"] = "false"
        p["enable.auto.offset.store"] = "false"
        return p
    }
}

/// Settings of a producer; every message is acknowledged by all in-sync replicas.
public struct KafkaProducerConfiguration: Sendable {
    public var kafka: KafkaConfiguration
    public var lingerMs: Int = 5
    public var messageTimeoutMs: Int = 30_000

    public init(kafka: KafkaConfiguration) {
        self.kafka = kafka
    }

    var librdkafkaProperties: [String: String] {
        var p = kafka.librdkafkaProperties
        let typed: [String: String] = [
            "acks": "all",
            "enable.idempotence": "true",
            "linger.ms": String(lingerMs),
            "message.timeout.ms": String(messageTimeoutMs),
        ]
        p.merge(typed) { passedThrough, _ in passedThrough }
        return p
    }
}

extension KafkaConfiguration {
    /// A setting librdkafka takes at creation and only trips over while connecting, where it would
    /// look like an unreachable cluster (exit 3 after the connect timeout) instead of a typo.
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        /// The librdkafka property at fault, e.g. `bootstrap.servers`.
        public let property: String
        /// The offending part of its value: one broker entry, a path.
        public let value: String
        public let problem: String
        public var description: String { "\(property): \(String(reflecting: value)) \(problem)" }
    }

    /// Properties that name a file librdkafka reads when it connects.
    static let fileProperties = [
        "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.keystore.location",
        "ssl.crl.location", "sasl.kerberos.keytab",
    ]

    /// Checks the effective broker list (pass-through properties included) and that named files exist.
    public func validate() throws(Invalid) {
        let properties = librdkafkaProperties
        let servers = properties["bootstrap.servers"] ?? ""
        var entries = 0
        for raw in servers.split(separator: ",") {
            let entry = raw.trimmingCharacters(in: .whitespaces)
            if entry.isEmpty { continue }
            entries += 1
            if let problem = Self.problem(withBroker: entry) {
                throw Invalid(property: "bootstrap.servers", value: entry, problem: problem)
            }
        }
        guard entries > 0 else {
            throw Invalid(
                property: "bootstrap.servers",
                value: servers,
                problem: "names no broker (expected host:port[,host:port…])"
            )
        }
        for property in Self.fileProperties {
            // `probe` asks librdkafka to look in the usual system locations.
            guard let path = properties[property], !(property == "ssl.ca.location" && path == "probe") else { continue }
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw Invalid(property: property, value: path, problem: "is not a readable file")
            }
        }
    }

    /// What is wrong with one `[scheme://]host[:port]` entry (IPv6 hosts in brackets), if anything.
    static func problem(withBroker entry: String) -> String? {
        var rest = Substring(entry)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        let host: Substring
        var port: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return "has '[' without ']'" }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { return "has text after ']' that is not :port" }
            port = after.isEmpty ? nil : after.dropFirst()
            // Hex digits and ':', then perhaps a zone such as `%eth0`.
            guard host.utf8.allSatisfy({ isHostByte($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "%") }) else {
                return "has an IPv6 address that is not hex digits and ':'"
            }
        } else {
            let colons = rest.utf8.filter { $0 == UInt8(ascii: ":") }.count
            if colons == 1, let colon = rest.firstIndex(of: ":") {
                host = rest[..<colon]
                port = rest[rest.index(after: colon)...]
            } else {
                // No port (librdkafka's default, 9092), or a bare IPv6 address.
                host = rest
            }
            guard host.utf8.allSatisfy({ isHostByte($0) || colons > 1 && (isHexDigit($0) || $0 == UInt8(ascii: ":")) })
            else {
                return "has a host name that is not letters, digits, '.', '-' and '_'"
            }
        }
        guard !host.isEmpty else { return "has no host" }
        if let port {
            guard !port.isEmpty, port.utf8.count <= 5,
                port.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                let number = Int(port), (1...65535).contains(number)
            else { return "has a port that is not a number from 1 to 65535" }
        }
        return nil
    }

    private static func isHostByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }

    private static func isHexDigit(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default: false
        }
    }
}
