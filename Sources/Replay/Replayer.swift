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
        public init(categories: Categories) { self.categories = categories }
    }

    typealias ReplayPipeline = Pipeline<ReplayPreparer, ReplaySender, ContinuousClock>

    let source: Source
    let tally: ReplayTally
    let pipeline: ReplayPipeline
    let report: @Sendable (String) -> Void

    /// `report` receives problem lines and the progress line (stderr in the CLI).
    public init(source: Source, client: NotificationHubClient?, deadLetters: (any DeadLetterSink)?, configuration: Configuration,
                metrics: PipelineMetrics, logger: Logger, report: @escaping @Sendable (String) -> Void) {
        self.source = source
        self.report = report
        tally = ReplayTally(maxExamples: configuration.examples)
        var records: any RecordSource = switch source {
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
        pipeline = Pipeline(
            source: records, preparer: ReplayPreparer(configuration: configuration, tally: tally, metrics: metrics, report: report),
            sender: ReplaySender(client: client, tally: tally, metrics: metrics, logger: logger),
            deadLetters: deadLetters ?? NoDeadLetterSink(), configuration: shell, metrics: metrics, logger: logger, clock: ContinuousClock())
    }

    public var result: ReplayCounts { tally.result }
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
        let remaining: Int = switch source {
        case .file(_, let total): max(0, total - c.read)
        case .kafka(let consumer): Int(consumer.lag)
        }
        let eta = rate > 0 ? String(format: "%.0f s", Double(remaining) / max(rate, Double(c.read) / seconds)) : "-"
        return String(format: "replay%@: read %d, sent %d, skipped %d, failed %d, %.1f sends/s%@", final ? " done" : "",
                      c.read, c.sent, c.skipped, c.failed, rate, final ? String(format: " in %.1f s", seconds) : ", ETA \(eta)")
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
