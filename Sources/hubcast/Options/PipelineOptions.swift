import ArgumentParser
import Broadcast
import Foundation
import Kafka
import Logging
import News
import NotificationHubs
import TextFormats

/// How the pipeline consumes, sends and reports: `hubcast run` and `hubcast demo`.
struct PipelineOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Consumer group (env HUBCAST_GROUP; default hubcast).", valueName: "id"))
    var group: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Sends in flight at most, and HTTP connections kept open (up to 512): a cap; the pace adapts to the hub's throttling by rate (env HUBCAST_CONCURRENCY; default 64).",
            valueName: "n"
        )
    )
    var concurrency: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The hub's quota if known, in sends per second: never exceeded; without it the rate is learnt from throttling (env HUBCAST_MAX_RATE; default: learnt).",
            valueName: "n"
        )
    )
    var maxRate: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Ignored, kept so existing settings still parse: throttling now lowers the send rate, not the concurrency (env HUBCAST_MIN_CONCURRENCY).",
            valueName: "n"
        )
    )
    var minConcurrency: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Most messages taken from Kafka at once (env HUBCAST_BATCH_SIZE; default 100). A full queue asks only for what it has room for, as sends finish, so a breaking item does not wait for room for a whole batch.",
            valueName: "n"
        )
    )
    var batchSize: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Ignored, kept so existing settings still parse: a batch is taken as soon as a message arrives and the next is asked for while the pool has room (env HUBCAST_BATCH_LINGER_MS).",
            valueName: "ms"
        )
    )
    var batchLingerMs: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How long a fetch waits at the broker for data, in ms: a Kafka broker answers as soon as data arrives, so this is how often an idle consumer asks; on the dev broker it is the latency (env HUBCAST_FETCH_WAIT_MS; default 3).",
            valueName: "ms"
        )
    )
    var fetchWaitMs: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How often finished offsets are committed, in ms (env HUBCAST_COMMIT_INTERVAL_MS; default 1000).",
            valueName: "ms"
        )
    )
    var commitIntervalMs: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "On SIGTERM/SIGINT, seconds in-flight sends get to finish (env HUBCAST_DRAIN_TIMEOUT; default 30).",
            valueName: "seconds"
        )
    )
    var drainTimeout: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Dead-letter sink: kafka:TOPIC or file:PATH (env HUBCAST_DLQ; default kafka:news.deadletter).",
            valueName: "sink"
        )
    )
    var dlq: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds between metrics lines on stdout (env HUBCAST_METRICS_INTERVAL; default 10).",
            valueName: "seconds"
        )
    )
    var metricsInterval: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Largest message accepted, in bytes; larger ones are dead-lettered as invalid (env HUBCAST_MAX_MESSAGE_BYTES; default 65536).",
            valueName: "bytes"
        )
    )
    var maxMessageBytes: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Exit once no message arrived for this many seconds and nothing is in flight (env HUBCAST_EXIT_WHEN_IDLE; default: run until signalled).",
            valueName: "seconds"
        )
    )
    var exitWhenIdle: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds after its Kafka timestamp an item without expiresAt may still be sent; older ones, and sends still waiting or retrying then, are dead-lettered as stale; 0: no bound (env HUBCAST_MAX_AGE; default 1200).",
            valueName: "seconds"
        )
    )
    var maxAge: Int?

    @Option(
        name: .customLong("category-priority"),
        help: ArgumentHelp(
            "The priority of a category's items that name none, Category=breaking|normal|bulk; repeatable (env HUBCAST_CATEGORY_PRIORITY, comma-separated; default normal).",
            valueName: "Category=priority"
        )
    )
    var categoryPriority: [String] = []

    @Option(
        name: .customLong("slo"),
        help: ArgumentHelp(
            "A time-to-hub target for a priority, priority=seconds (Kafka timestamp to the hub's acceptance); sends later than it are counted in sloMissed; repeatable (env HUBCAST_SLO, comma-separated; default none).",
            valueName: "priority=seconds"
        )
    )
    var slo: [String] = []

    @OptionGroup var quota: QuotaTopicOption

    @OptionGroup var ledger: LedgerOption

    func configuration(_ settings: Settings, categories: Categories) throws(CLIError) -> PipelineConfiguration {
        var config = PipelineConfiguration(categories: categories)
        config.concurrency = try settings.int(concurrency, "concurrency", default: 64, range: 1...10_000)
        _ = try settings.int(minConcurrency, "min-concurrency", default: 1, range: 1...10_000)
        config.maxRate = try settings.double(maxRate, "max-rate", range: 0.1...1_000_000)
        config.batchSize = try settings.int(batchSize, "batch-size", default: 100, range: 1...100_000)
        config.batchLinger = .milliseconds(
            try settings.int(batchLingerMs, "batch-linger-ms", default: 5, range: 0...60_000)
        )
        config.commitInterval = .milliseconds(
            try settings.int(commitIntervalMs, "commit-interval-ms", default: 1000, range: 10...600_000)
        )
        config.fetchWaitMs = try settings.int(fetchWaitMs, "fetch-wait-ms", default: 3, range: 1...10_000)
        config.drainTimeout = .seconds(try settings.int(drainTimeout, "drain-timeout", default: 30, range: 0...3600))
        config.dedupeWindow = try ledger.window(settings)
        config.maxMessageBytes = try settings.int(
            maxMessageBytes,
            "max-message-bytes",
            default: NewsItemDecoder.defaultMaxMessageBytes,
            range: 64...16_777_216
        )
        if let idle = try settings.int(exitWhenIdle, "exit-when-idle", default: 0, range: 0...86_400) as Int?, idle > 0
        {
            config.stopWhenIdle = .seconds(idle)
        }
        let age = try settings.int(maxAge, "max-age", default: 1200, range: 0...31_536_000)
        config.maxAge = age == 0 ? nil : .seconds(age)
        config.categoryPriority = try categoryPriorities(settings, categories: categories)
        config.targets = try targets(settings)
        return config
    }

    private func targets(_ settings: Settings) throws(CLIError) -> [Priority: Duration] {
        let shape = "breaking|normal|bulk=seconds (more than 0, at most 86400)"
        var targets: [Priority: Duration] = [:]
        for pair in try settings.pairs(slo, "slo", shape: shape) {
            guard let priority = Priority(name: pair.key), let seconds = Double(pair.value), seconds.isFinite,
                seconds > 0, seconds <= 86_400
            else {
                throw .usage("--slo: expected \(shape), got \(LegibleText.quoted(pair.entry))")
            }
            targets[priority] = .milliseconds(Int64((seconds * 1000).rounded()))
        }
        return targets
    }

    private func categoryPriorities(_ settings: Settings, categories: Categories) throws(CLIError) -> [String: Priority]
    {
        let shape = "Category=breaking|normal|bulk"
        var priorities: [String: Priority] = [:]
        for pair in try settings.pairs(categoryPriority, "category-priority", shape: shape) {
            guard let priority = Priority(name: pair.value) else {
                throw .usage("--category-priority: expected \(shape), got \(LegibleText.quoted(pair.entry))")
            }
            guard categories.topic(for: pair.key) != nil else {
                throw .usage(
                    "--category-priority: \(LegibleText.quoted(pair.key)) is not one of \(categories.names.joined(separator: ", "))"
                )
            }
            priorities[pair.key] = priority
        }
        return priorities
    }

    func groupID(_ settings: Settings) -> String { settings.string(group, "group", default: "hubcast") }

    func interval(_ settings: Settings) throws(CLIError) -> Duration {
        .seconds(try settings.int(metricsInterval, "metrics-interval", default: 10, range: 1...86_400))
    }

    /// The dead-letter sink named by --dlq.
    func deadLetterSink(
        _ settings: Settings,
        kafka: KafkaConfiguration,
        logger: Logger
    ) throws(CLIError) -> (any DeadLetterSink, KafkaProducer?) {
        try Self.sink(settings.string(dlq, "dlq", default: "kafka:news.deadletter"), kafka: kafka, logger: logger)
    }

    /// A sink from `kafka:TOPIC` or `file:PATH`.
    static func sink(
        _ spec: String,
        kafka: KafkaConfiguration,
        logger: Logger
    ) throws(CLIError) -> (any DeadLetterSink, KafkaProducer?) {
        if spec.hasPrefix("file:"), spec.count > 5 {
            do {
                return (try FileDeadLetterSink(path: String(spec.dropFirst(5))), nil)
            } catch {
                throw .usage("--dlq: cannot open \(LegibleText.quoted(spec.dropFirst(5))) for appending")
            }
        }
        guard spec.hasPrefix("kafka:"), spec.count > 6 else {
            throw .usage("--dlq: expected kafka:TOPIC or file:PATH, got \(LegibleText.quoted(spec))")
        }
        do {
            let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(kafka: kafka), logger: logger)
            return (KafkaDeadLetterSink(producer: producer, topic: String(spec.dropFirst(6))), producer)
        } catch {
            throw .usage("Kafka configuration", error)
        }
    }
}
