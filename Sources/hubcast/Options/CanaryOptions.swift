import ArgumentParser
import Broadcast
import Kafka
import Logging
import NotificationHubs
import TextFormats

/// The canary's topic, shared by `run` and `canary`.
struct CanaryTopicOption: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Kafka topic of canary requests and results, with one partition (env HUBCAST_CANARY_TOPIC; default hubcast.canary).",
            valueName: "topic"
        )
    )
    var canaryTopic: String?

    func topic(_ settings: Settings) throws(CLIError) -> String {
        try Settings.topicName(
            settings.string(canaryTopic, "canary-topic", default: Canary.defaultTopic),
            flag: "canary-topic"
        )
    }

    /// The producer of canary requests and results, checked at start-up: Kafka answers (exit 3 if
    /// not) and the topic exists (exit 2 if not, naming it).
    static func producer(
        for topic: String,
        kafka: KafkaConfiguration,
        timeout: Duration,
        logger: Logger
    ) async throws(CLIError) -> KafkaProducer {
        let producer: KafkaProducer
        do {
            producer = try KafkaProducer(configuration: KafkaProducerConfiguration(kafka: kafka), logger: logger)
        } catch {
            throw .usage("Kafka configuration: \(error)")
        }
        do {
            try await producer.checkReachable(timeout: timeout)
        } catch {
            throw .unreachable("could not reach Kafka at \(kafka.bootstrapServers): \(error)")
        }
        try await requireTopic(topic, producer: producer, kafka: kafka, timeout: timeout)
        return producer
    }

    private static func requireTopic(
        _ topic: String,
        producer: KafkaProducer,
        kafka: KafkaConfiguration,
        timeout: Duration
    ) async throws(CLIError) {
        let partitions: Int?
        do {
            partitions = try await producer.partitionCount(topic: topic, timeout: timeout)
        } catch {
            throw .unreachable("could not read the canary topic's metadata from \(kafka.bootstrapServers): \(error)")
        }
        guard partitions != nil else {
            throw .usage(
                "the canary topic \(topic) does not exist: create it with one partition, or name another with --canary-topic"
            )
        }
    }
}

/// `run`'s canary: on with --canary-every (periodic) or --canary-tag (on request only).
struct CanaryOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Send a synthetic breaking item through the whole path this often, in seconds (\"60\" or \"60s\"), one per interval for the whole group; each outcome is a metric and a stdout line (env HUBCAST_CANARY_EVERY; default off).",
            valueName: "seconds"
        )
    )
    var canaryEvery: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The tag canaries are sent to, carried only by test devices; alone, without --canary-every, answers `hubcast canary --once` only (env HUBCAST_CANARY_TAG; default hubcast-canary).",
            valueName: "tag"
        )
    )
    var canaryTag: String?

    @OptionGroup var topic: CanaryTopicOption

    /// nil when the canary is off.
    func configuration(_ settings: Settings, instance: String, group: String) throws(CLIError) -> Canary.Configuration?
    {
        let everyText = settings.string(canaryEvery, "canary-every")
        let tagText = settings.string(canaryTag, "canary-tag")
        guard everyText != nil || tagText != nil else { return nil }
        var every: Duration?
        if let everyText {
            let number = everyText.hasSuffix("s") ? String(everyText.dropLast()) : everyText
            guard let seconds = Double(number), seconds.isFinite, seconds >= 1, seconds <= 86_400 else {
                throw .usage(
                    "--canary-every: expected seconds between 1 and 86400 (\"60\" or \"60s\"), got \(LegibleText.quoted(everyText))"
                )
            }
            every = .milliseconds(Int64((seconds * 1000).rounded()))
        }
        let tag = tagText ?? Canary.defaultTag
        guard case .tag? = try? TagExpression(parsing: tag) else {
            throw .usage(
                "--canary-tag: \(LegibleText.quoted(tag)) is not a single tag (letters, digits and _@#.:-, at most 120)"
            )
        }
        return Canary.Configuration(
            topic: try topic.topic(settings),
            tag: tag,
            every: every,
            instance: instance,
            group: group
        )
    }
}
