import Broadcast
import Foundation
import Kafka
import Logging
import News
import NotificationHubs
import ServiceLifecycle

/// `hubcast replay`: the pipeline's engine with another source (a dead-letter topic or file) and
/// other sinks (a new dead-letter sink), so replay commits, drains, holds through hub outages and
/// stops exactly as `run` does.
public final class Replayer: Service, Sendable {
    /// Where the records come from.
    public enum Source: Sendable {
        case file(LineReader, totalLines: Int)
        case kafka(KafkaConsumer)
    }

    /// Replay settings.
    public struct Configuration: Sendable {
        public var categories: Categories
        public var filter = ReplayFilter()
        public var dryRun = false
        /// Sends per second at most; nil for no cap.
        public var rate: Double?
        public var concurrency = 16
        public var includeExpired = false
        /// Examples printed by a dry run.
        public var examples = 5
        /// Kafka: stop once nothing arrived for this long.
        public var idle: Duration = .seconds(3)
        public var drainTimeout: Duration = .seconds(30)
        /// How long the hub may refuse or fail to answer (credentials, TLS, no answer) before the
        /// replay stops with what it has not sent; nil waits as long as it runs.
        public var hubWait: Duration? = .seconds(60)
        public init(categories: Categories) { self.categories = categories }
    }

    typealias ReplayPipeline = Pipeline<ReplayPreparer, ReplaySender, ContinuousClock>

    let source: Source
    let tally: ReplayTally
    let pipeline: ReplayPipeline
    let report: @Sendable (String) -> Void
    let deadLetters: (any DeadLetterSink)?
    let dryRun: Bool
    let hubWatch: HubWatch

    /// `report` receives problem lines and the progress line (stderr in the CLI). `clients`: by hub
    /// number, as `routes` names them (empty in a dry run); `maxRates`: each hub's known quota.
    public init(
        source: Source,
        clients: [NotificationHubClient],
        routes: HubRoutes = .single("hub"),
        maxRates: [Double?] = [],
        deadLetters: (any DeadLetterSink)?,
        quota: QuotaSharing? = nil,
        ledger: (any DeliveryLedger)? = nil,
        recorded: [RecordedSend] = [],
        configuration: Configuration,
        metrics: PipelineMetrics,
        logger: Logger,
        report: @escaping @Sendable (String) -> Void
    ) {
        self.source = source
        self.report = report
        self.deadLetters = deadLetters
        dryRun = configuration.dryRun
        let hubWatch = HubWatch(limit: configuration.hubWait)
        self.hubWatch = hubWatch
        tally = ReplayTally(maxExamples: configuration.examples)
        var records: any RecordSource =
            switch source {
            case .file(let reader, let totalLines): FileRecordSource(reader: reader, totalLines: totalLines)
            case .kafka(let consumer): consumer
            }
        if configuration.dryRun { records = NonCommittingSource(base: records) }
        var shell = ReplayPipeline.Configuration()
        shell.engine.maxInFlight = configuration.concurrency
        shell.engine.pacing.maxRate = configuration.rate
        shell.engine.batchSize = 500
        shell.engine.maxQueued = max(1000, configuration.concurrency * 2)
        shell.engine.drainTimeout = configuration.drainTimeout
        shell.engine.revokeTimeout = min(.seconds(10), configuration.drainTimeout)
        shell.engine.stopWhenIdle = configuration.idle
        shell.hubNames = routes.hubs
        // A hub's known quota, and --rate, the replay's own cap, whichever is lower.
        shell.engine.paceHubs(
            count: routes.hubs.count,
            maxRates: maxRates.map { rate in rate.map { min($0, configuration.rate ?? $0) } }
        )
        pipeline = Pipeline(
            source: records,
            preparer: ReplayPreparer(
                configuration: configuration,
                tally: tally,
                metrics: metrics,
                delivered: Set(recorded.map(\.processKey)),
                routes: routes,
                report: report
            ),
            sender: ReplaySender(
                clients: clients,
                hubNames: routes.hubs.count > 1 ? routes.hubs : nil,
                ledger: ledger,
                tally: tally,
                metrics: metrics,
                logger: logger
            ),
            deadLetters: deadLetters ?? NoDeadLetterSink(),
            quota: quota,
            configuration: shell,
            metrics: metrics,
            observer: PipelineObserver(
                hubUnavailable: { hubWatch.unavailable($1, hub: $0) },
                hubAvailable: { hubWatch.available(hub: $0) }
            ),
            logger: logger,
            clock: ContinuousClock()
        )
        let pipeline = self.pipeline
        hubWatch.onLimit = { reason in
            report("replay: the hub has been unavailable for longer than the hub wait (\(reason)): stopping")
            pipeline.requestShutdown()
        }
    }

    public var result: ReplayCounts { tally.result }

    /// What a replay left undone, once it has run: the sends it planned and did not settle (held
    /// by a hub outage, or cut by a signal), the records of a file it never read, and those of
    /// both it carried to the dead-letter sink so a replay of that sink finishes the work.
    public struct Unfinished: Sendable, Equatable {
        public var held = 0
        public var unread = 0
        public var carried = 0
        /// The hub's last failure while sends were held, if any.
        public var hubProblem: String?
        public var isEmpty: Bool { held == 0 && unread == 0 }
    }

    /// Counts what was not done and, for a file, writes it to the dead-letter sink: a file has no
    /// group to remember a position, so the sink is where the rest of the work goes on.
    public func finish() async -> Unfinished {
        let pending = tally.pending
        var unfinished = Unfinished(held: pending.count, hubProblem: hubWatch.lastProblem)
        guard !dryRun, case .file(let reader, _) = source, let deadLetters else { return unfinished }
        var carried: [DeadLetterRecord] = pending.map {
            DeadLetterRecord(carrying: $0.record, audience: $0.send.tagExpression)
        }
        while true {
            let lines = await reader.next(max: 1000)
            if lines.isEmpty { break }
            for line in lines where !line.bytes.isEmpty {
                unfinished.unread += 1
                do {
                    let record = try ReplayRecord(json: line.bytes)
                    carried.append(DeadLetterRecord(carrying: record, audience: record.audience))
                } catch {
                    report("replay: line \(line.number): corrupt dead-letter record (\(error)), not carried")
                }
            }
        }
        for record in carried {
            do {
                try await deadLetters.write(record)
                unfinished.carried += 1
            } catch {
                report("replay: could not carry a record to the dead-letter sink: \(error)")
            }
        }
        try? await deadLetters.flush()
        return unfinished
    }
    public var dryRunExamples: [String] { tally.dryRunExamples }

    public func run() async throws {
        let started = ContinuousClock.now
        let progress = Task { await reportProgress(started: started) }
        defer { progress.cancel() }
        try await pipeline.run()
        report(progressLine(elapsed: ContinuousClock.now - started, final: true))
    }

    private func reportProgress(started: ContinuousClock.Instant) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            if Task.isCancelled { return }
            report(progressLine(elapsed: ContinuousClock.now - started, final: false))
        }
    }

    private func progressLine(elapsed: Duration, final: Bool) -> String {
        let c = result
        let seconds = max(0.001, elapsed.inSeconds)
        let rate = Double(c.sent + c.failed) / seconds
        let remaining: Int =
            switch source {
            case .file(_, let total): max(0, total - c.read)
            case .kafka(let consumer): Int(consumer.lag)
            }
        let eta = rate > 0 ? String(format: "%.0f s", Double(remaining) / max(rate, Double(c.read) / seconds)) : "-"
        return String(
            format: "replay%@: read %d, sent %d, skipped %d, failed %d, %.1f sends/s%@",
            final ? " done" : "",
            c.read,
            c.sent,
            c.skipped,
            c.failed,
            rate,
            final ? String(format: " in %.1f s", seconds) : ", ETA \(eta)"
        )
    }
}

/// A dry run writes no dead letters; should one be asked for, refusing it keeps its record uncommitted.
private struct NoDeadLetterSink: DeadLetterSink {
    struct NotConfigured: Error, CustomStringConvertible {
        var description: String { "no dead-letter sink in a dry run" }
    }

    func write(_ record: DeadLetterRecord) async throws { throw NotConfigured() }
    func flush() async throws {}
}

extension DeadLetterRecord {
    /// A record read for replay and not sent, written again as it was (reason, error, attempts,
    /// source, time), so filters select it as before.
    init(carrying record: ReplayRecord, audience: String?) {
        self.init(
            reason: record.reason,
            error: record.error,
            status: record.status,
            attempts: record.attempts,
            message: record.message,
            itemID: record.itemID,
            category: record.category,
            audience: audience,
            platform: record.platform,
            hub: record.hub,
            source: KafkaMessage(
                topic: record.sourceTopic,
                partition: record.sourcePartition,
                offset: record.sourceOffset,
                value: record.message
            ),
            deadLetteredAt: record.deadLetteredAt
        )
    }
}
