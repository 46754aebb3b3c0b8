import ArgumentParser
import Broadcast
import Foundation
import Kafka
import Logging

/// `hubcast canary --once`: one canary through the running group, for a cron job or a deploy gate.
struct CanaryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "canary",
        abstract: "Send one canary through the running pipeline and wait for its outcome.",
        discussion: """
            Writes a canary request to the canary topic. A `hubcast run` of the group that consumes it (started with \
            --canary-tag or --canary-every) sends it as a breaking item to the canary tag, reads the hub's telemetry where \
            the hub has it, and writes the outcome back to the topic, where this command waits for it. Prints the outcome \
            as one JSON line on stdout and exits 0 when the hub accepted it (verified or accepted), 1 when it failed or no \
            instance answered within --timeout (plus 5 s for the answer to come back), 2 for a configuration error, 3 when \
            Kafka cannot be reached.
            """
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var kafka: KafkaOptions
    @OptionGroup var topic: CanaryTopicOption

    @Flag(
        name: .long,
        help: "Send one canary and exit (required: periodic canaries come from `hubcast run --canary-every`)."
    )
    var once = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How long the canary may take to reach the hub before it counts as failed (default 30).",
            valueName: "seconds"
        )
    )
    var timeout: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The consumer group of the `hubcast run` that is to send it (env HUBCAST_GROUP; default hubcast).",
            valueName: "id"
        )
    )
    var group: String?

    func run() async throws {
        guard once else { throw CLIError.usage("say --once: periodic canaries come from `hubcast run --canary-every`") }
        let settings = try await common.settings()
        let logger = try common.bootstrapLogging(settings, label: "hubcast.canary")
        let kafkaConfig = try kafka.configuration(settings)
        let connectTimeout = try kafka.timeout(settings)
        let canaryTopic = try topic.topic(settings)
        let seconds = timeout ?? 30
        guard (1...3600).contains(seconds) else {
            throw CLIError.usage("--timeout must be between 1 and 3600, got \(seconds)")
        }

        let producer = try await CanaryTopicOption.producer(
            for: canaryTopic,
            kafka: kafkaConfig,
            timeout: connectTimeout,
            logger: logger
        )
        let consumer: KafkaConsumer
        let instance = QuotaSharing.uniqueInstance()
        do {
            // A group of its own, from the start of the topic: its answer cannot be missed, however
            // soon it comes; the answers to other canaries are skipped by id.
            var consumerConfig = KafkaConsumerConfiguration(
                kafka: kafkaConfig,
                groupID: "hubcast-canary-" + instance,
                topics: [canaryTopic]
            )
            consumerConfig.offsetReset = .earliest
            consumerConfig.fetchWaitMaxMs = 50
            var quiet = logger
            if quiet.logLevel >= .info { quiet.logLevel = max(quiet.logLevel, .warning) }
            consumer = try KafkaConsumer(configuration: consumerConfig, logger: quiet)
        } catch {
            throw CLIError.usage("Kafka configuration: \(error)")
        }
        let groupID = settings.string(group, "group", default: "hubcast")

        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let request = CanaryRequest(
            id: "canary-once-\(instance)",
            requestedAtMs: now,
            deadlineMs: now + Int64(seconds) * 1000,
            by: "canary --once@\(instance)",
            group: groupID
        )
        let result = try await withThrowingTaskGroup(of: CanaryResult?.self, returning: CanaryResult?.self) { group in
            group.addTask {
                do {
                    try await consumer.run()
                } catch {
                    // Its messages end with it, so the waiter returns at once: this is the error shown.
                    throw CLIError.unreachable(
                        "reading the canary topic from \(kafkaConfig.bootstrapServers) failed: \(error)"
                    )
                }
                return nil
            }
            group.addTask {
                // However it ends, the consumer ends with it.
                defer { consumer.stop() }
                do {
                    _ = try await producer.send(
                        topic: canaryTopic,
                        partition: 0,
                        value: CanaryRecord.request(request).bytes
                    )
                } catch {
                    throw CLIError.failure("the canary request could not be written to \(canaryTopic): \(error)")
                }
                let waitUntil = ContinuousClock.now + .seconds(seconds + 5)
                while ContinuousClock.now < waitUntil {
                    let messages: [KafkaMessage]
                    switch await consumer.messages.nextBatch(max: 100, timeout: waitUntil - ContinuousClock.now) {
                    case .batch(let batch): messages = batch
                    case .timedOut: continue
                    case .finished: return nil
                    }
                    for message in messages {
                        if case .result(let result)? = CanaryRecord(bytes: message.value), result.id == request.id {
                            return result
                        }
                    }
                }
                return nil
            }
            var answer: CanaryResult?
            for try await next in group where next != nil { answer = next }
            return answer
        }
        try? await producer.close(timeout: .seconds(5))
        guard let result else {
            throw CLIError.failure(
                "no instance answered the canary \(request.id) within \(seconds + 5) s: is a `hubcast run` with --canary-tag or --canary-every consuming \(canaryTopic)?"
            )
        }
        FileHandle.standardOutput.write(
            Data(Canary.line(result, nowMs: Int64(Date().timeIntervalSince1970 * 1000)) + [0x0A])
        )
        if !result.succeeded {
            throw CLIError.failure("the canary failed: \(result.reason ?? "no reason given")")
        }
    }
}
