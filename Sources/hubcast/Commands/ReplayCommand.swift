import ArgumentParser
import Broadcast
import Foundation
import Kafka
import Logging
import Metrics
import News
import Newsroom
import NotificationHubs
import Replay
import ServiceLifecycle
import Telemetry
import TextFormats

/// `hubcast replay`: re-send what was dead-lettered, once the cause is fixed.
struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Re-send dead-lettered sends from a dead-letter topic or file.",
        discussion: """
            Reads dead-letter records (schemas/dead-letter.schema.json) and re-sends each record's item to its \
            audience through the same client and retry policy as `hubcast run`. A corrupt record is reported with \
            its position and skipped. `invalid` records are re-sent only if the item now validates; expired items \
            are skipped unless --include-expired. The same (item id, audience) goes out at most once per replay, \
            and not at all once the hub accepted it: the sends recorded in the delivered-sends ledger (--ledger-topic; \
            by `run` and by earlier replays) are skipped, so a file replayed twice is sent once. From Kafka the ledger \
            is used by default; from a file only when --ledger-topic is given (without it, a warning). \
            Sends that fail again go to --dlq, never back to --from. From Kafka, replay uses its own consumer group \
            and commits as it goes, so an interrupted replay resumes where it stopped. The hub's credentials are \
            checked first, as `run` does (exit 2 refused, 3 unreachable); a hub that fails once the replay runs is \
            waited for at most --hub-wait seconds. Whatever was read and not sent (held, or cut short by a signal) \
            is counted in the summary: from Kafka it is not committed, so the next replay reads it again; from a \
            file it is written to --dlq with what was never read, so a replay of --dlq finishes the work. \
            It shares the hub's quota with the `hubcast run` instances sending to the same hub (--quota-topic): from \
            Kafka by default, from a file when --quota-topic is given. Progress on stderr; metrics JSON on stdout as \
            with `run`. Exit 0 only if every record was sent or skipped; 1 if a send failed again or anything was left \
            unsent.
            """
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var kafka: KafkaOptions
    @OptionGroup var categoryOptions: CategoryOptions
    @OptionGroup var hubOptions: HubOptions

    @Option(name: .long, help: ArgumentHelp("Where the records are: kafka:TOPIC or file:PATH.", valueName: "source"))
    var from: String

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Where sends that fail again go: kafka:TOPIC or file:PATH (default: <from>.replay).",
            valueName: "sink"
        )
    )
    var dlq: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Consumer group when reading from Kafka (env HUBCAST_REPLAY_GROUP; default hubcast-replay).",
            valueName: "id"
        )
    )
    var group: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Only records dead-lettered at or after this RFC 3339 time.", valueName: "time")
    )
    var since: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Only records dead-lettered at or before this RFC 3339 time.", valueName: "time")
    )
    var until: String?

    @Option(name: .long, help: ArgumentHelp("Only these categories (comma-separated or repeated).", valueName: "name"))
    var category: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Only these reasons: throttled, server-error, timeout, transport, unauthorized, invalid, … (comma-separated or repeated).",
            valueName: "reason"
        )
    )
    var reason: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Only records whose last HTTP status is one of these (comma-separated or repeated).",
            valueName: "code"
        )
    )
    var status: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Only sends that failed at these hubs, by the names a routes file gave them (comma-separated or repeated).",
            valueName: "name"
        )
    )
    var fromHub: [String] = []

    @Option(name: .long, help: ArgumentHelp("Only these item ids (comma-separated or repeated).", valueName: "id"))
    var id: [String] = []

    @Flag(
        name: .long,
        help: "Print what would be sent (counts per category and reason, the first records) and send nothing."
    )
    var dryRun = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Sends per second at most (default: no cap; the rate is learnt from the hub's throttling either way).",
            valueName: "n"
        )
    )
    var rate: Double?

    @Option(name: .long, help: ArgumentHelp("Sends in flight at most (default 16).", valueName: "n"))
    var concurrency: Int = 16

    @Flag(name: .long, help: "Also re-send items whose expiresAt has passed.")
    var includeExpired = false

    @Option(
        name: .long,
        help: ArgumentHelp("Seconds between metrics lines on stdout (default 10).", valueName: "seconds")
    )
    var metricsInterval: Int = 10

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds the hub may fail (credentials, TLS, no answer) before the replay stops with what it has not sent; 0 waits for as long as it runs (env HUBCAST_HUB_WAIT; default 60).",
            valueName: "seconds"
        )
    )
    var hubWait: Int?

    @Flag(
        name: .long,
        help:
            "Skip the start-up check of the hub credentials (for a key without Listen rights) (env HUBCAST_SKIP_HUB_CHECK)."
    )
    var skipHubCheck = false

    @OptionGroup var routesOption: RoutesOption

    @OptionGroup var quota: QuotaTopicOption

    @OptionGroup var ledger: LedgerOption

    func run() async throws {
        let settings = try await common.settings()
        let logger = try common.bootstrapLogging(settings, label: "hubcast.replay")
        let categories = try categoryOptions.resolve(settings)
        var config = Replayer.Configuration(categories: categories)
        config.filter = try filter()
        config.dryRun = dryRun
        config.includeExpired = includeExpired
        guard (1...10_000).contains(concurrency) else {
            throw CLIError.usage("--concurrency must be between 1 and 10000, got \(concurrency)")
        }
        config.concurrency = concurrency
        if let rate {
            guard rate > 0 else { throw CLIError.usage("--rate must be above 0, got \(rate)") }
            config.rate = rate
        }
        let wait = try settings.int(hubWait, "hub-wait", default: 60, range: 0...86_400)
        config.hubWait = wait == 0 ? nil : .seconds(wait)
        let sinkSpec = dlq ?? (from.hasPrefix("file:") ? from + ".replay.jsonl" : from + ".replay")
        guard sinkSpec != from else {
            throw CLIError.usage("--dlq must differ from --from: failures never go back to the records being read")
        }

        let metrics = InMemoryMetrics()
        MetricsSystem.bootstrap(metrics)
        let kafkaConfig = try kafka.configuration(settings)
        let source = try await makeSource(kafkaConfig, settings: settings, logger: logger)
        let fromFile: Bool = if case .file = source { true } else { false }
        var clients: [NotificationHubClient] = []
        var sink: (any DeadLetterSink)?
        var producer: KafkaProducer?
        var deliveryLedger: KafkaDeliveryLedger?
        var recorded: [RecordedSend] = []
        // With --routes, each record goes back to the hub it failed at (else where its item's
        // routes say); a dry run reads the routes only to say how many would go to each hub.
        var routes = HubRoutes.single("hub")
        var hubs: [PipelineService.Hub] = []
        if !dryRun || settings.string(routesOption.routes, "routes") != nil {
            let named = try routesOption.hubs(settings, hubOptions: hubOptions, categories: categories.names)
            (hubs, routes) = (named.hubs, named.routes)
            if !dryRun {
                let transport = CurlTransport(configuration: named.transport, logger: logger)
                // The engine holds a throttled send for its Retry-After and paces the rest, as in `run`.
                clients = hubs.map {
                    HubSender.client(configuration: $0.configuration, transport: transport, logger: logger)
                }
            }
        }
        if !dryRun {
            // What the hub already accepted (from a run or an earlier replay) is not sent again. From
            // a file there may be no Kafka at all, so only when a topic is named.
            let ledgerTopic = try ledger.topic(settings, default: fromFile ? nil : KafkaDeliveryLedger.defaultTopic)
            if let opened = try await LedgerOption.open(
                topic: ledgerTopic,
                kafka: kafkaConfig,
                hubs: hubs.map(\.configuration.resourceURI),
                window: try ledger.window(settings),
                logger: logger
            ) {
                deliveryLedger = opened
                recorded = (try? await Blocking.run { opened.recordedAll() }) ?? []
            } else {
                logger.warning(
                    "No delivered-sends ledger (--ledger-topic): sends the hub already accepted may go again, and a second replay of these records repeats them"
                )
            }
            if !(try settings.bool(skipHubCheck, "skip-hub-check")) {
                for (client, hub) in zip(clients, hubs) {
                    try await HubCheck.verify(
                        client,
                        timeout: try kafka.timeout(settings),
                        name: hubs.count > 1 ? hub.name : nil
                    )
                }
            }
            (sink, producer) = try PipelineOptions.sink(sinkSpec, kafka: kafkaConfig, logger: logger)
        }
        // A replay sends to the hub beside the running instances: it takes its share of the quota
        // with them. From a file there may be no Kafka at all, so only when a topic is named.
        var shared: (exchange: KafkaQuotaExchange, sharing: QuotaSharing)?
        if !clients.isEmpty {
            shared = try QuotaTopicOption.sharing(
                topic: try quota.topic(settings, default: fromFile ? nil : QuotaSharing.defaultTopic),
                kafka: kafkaConfig,
                instance: QuotaSharing.uniqueInstance(),
                hubs: clients.map(\.configuration),
                logger: logger
            )
        }
        let replayer = Replayer(
            source: source,
            clients: clients,
            routes: routes,
            maxRates: hubs.map(\.maxRate),
            deadLetters: sink,
            quota: shared?.sharing,
            ledger: deliveryLedger,
            recorded: recorded,
            configuration: config,
            metrics: PipelineMetrics(categories: categories.names, hubs: routes.hubs),
            logger: logger,
            report: { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
        )
        let printer = MetricsPrinter(metrics: metrics, interval: .seconds(max(1, metricsInterval)))
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = dryRun ? [] : [.init(service: printer)]
        if case .kafka(let consumer) = source { services.append(.init(service: consumer)) }
        // Before the replayer, so it stops after it: the replay's leaving report goes out.
        if let exchange = shared?.exchange { services.append(.init(service: exchange)) }
        services.append(.init(service: replayer, successTerminationBehavior: .gracefullyShutdownGroup))
        let started = ContinuousClock.now
        try await ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        ).run()
        try? await producer?.close()
        await deliveryLedger?.close()
        let result = replayer.result
        if dryRun {
            print(dryRunReport(result, examples: replayer.dryRunExamples))
            return
        }
        let unfinished = await replayer.finish()
        printer.printFinal(elapsed: ContinuousClock.now - started)
        if !unfinished.isEmpty {
            FileHandle.standardError.write(Data((unfinishedReport(unfinished, sink: sinkSpec) + "\n").utf8))
        }
        if result.failed > 0 || !unfinished.isEmpty { throw ExitCode.failure }
    }

    private func makeSource(
        _ kafkaConfig: KafkaConfiguration,
        settings: Settings,
        logger: Logger
    ) async throws -> Replayer.Source {
        if from.hasPrefix("file:"), from.count > 5 {
            let path = String(from.dropFirst(5))
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw CLIError.usage("--from: cannot read \(path)")
            }
            return .file(try LineReader(path: path), totalLines: text.split(separator: "\n").count)
        }
        guard from.hasPrefix("kafka:"), from.count > 6 else {
            throw CLIError.usage("--from: expected kafka:TOPIC or file:PATH, got \"\(from)\"")
        }
        var consumerConfig = KafkaConsumerConfiguration(
            kafka: kafkaConfig,
            groupID: settings.string(group, "replay-group", default: "hubcast-replay"),
            topics: [String(from.dropFirst(6))]
        )
        consumerConfig.bufferCapacity = 2000
        let consumer: KafkaConsumer
        do {
            consumer = try KafkaConsumer(configuration: consumerConfig, logger: logger)
        } catch {
            throw CLIError.usage("Kafka configuration: \(error)")
        }
        do {
            try await consumer.checkReachable(timeout: try kafka.timeout(settings))
        } catch {
            throw CLIError.unreachable("could not reach Kafka at \(kafkaConfig.bootstrapServers): \(error)")
        }
        return .kafka(consumer)
    }

    private func filter() throws(CLIError) -> ReplayFilter {
        var f = ReplayFilter()
        func time(_ text: String?, _ flag: String) throws(CLIError) -> Double? {
            guard let text else { return nil }
            guard let t = Timestamp(rfc3339: text) else {
                throw .usage("--\(flag): \"\(text)\" is not RFC 3339, e.g. 2026-11-22T18:00:00Z")
            }
            return t.epochSeconds
        }
        func list(_ values: [String]) -> Set<String> {
            Set(
                values.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }.filter {
                    !$0.isEmpty
                }
            )
        }
        f.since = try time(since, "since")
        f.until = try time(until, "until")
        f.categories = list(category)
        f.reasons = list(reason)
        f.ids = list(id)
        f.hubs = list(fromHub)
        var statuses = Set<Int>()
        for text in list(status) {
            guard let code = Int(text) else { throw .usage("--status: \"\(text)\" is not an HTTP status") }
            statuses.insert(code)
        }
        f.statuses = statuses
        return f
    }

    /// What is left and where it is, for the operator who reruns the job.
    private func unfinishedReport(_ u: Replayer.Unfinished, sink: String) -> String {
        var parts = [
            "held \(u.held)"
                + (u.held > 0
                    ? " (\(u.hubProblem.map { LegibleText.sanitized($0) } ?? "stopped before they were sent"))" : "")
        ]
        if from.hasPrefix("file:") {
            parts.append("unread \(u.unread)")
            return "replay: not sent: " + parts.joined(separator: ", ")
                + "; \(u.carried) record\(u.carried == 1 ? "" : "s") written to \(sink): replay --from \(sink) to send the rest"
        }
        return "replay: not sent: " + parts.joined(separator: ", ")
            + "; not committed: the next replay of \(from) reads them again"
    }

    private func dryRunReport(_ c: ReplayCounts, examples: [String]) -> String {
        let total = c.wouldSendByCategory.values.reduce(0, +)
        var lines = [
            "dry run: \(total) send\(total == 1 ? "" : "s") would go out; nothing was sent",
            "records read \(c.read): corrupt \(c.corrupt), filtered out \(c.filtered), still invalid \(c.stillInvalid), expired \(c.expired), duplicates \(c.duplicates), already delivered \(c.deduplicated)",
        ]
        lines.append(
            "by category: "
                + c.wouldSendByCategory.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
                    separator: ", "
                )
        )
        lines.append(
            "by reason: "
                + c.wouldSendByReason.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        )
        if !c.wouldSendByHub.isEmpty {
            lines.append(
                "by hub: "
                    + c.wouldSendByHub.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
                        separator: ", "
                    )
            )
        }
        if c.noHub > 0 { lines.append("no hub in the routes: \(c.noHub)") }
        if !examples.isEmpty { lines.append("first records:") }
        lines += examples.map { "  " + $0 }
        return lines.joined(separator: "\n")
    }
}
