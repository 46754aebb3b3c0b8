import Broadcast
import Foundation
import Kafka
import Logging
import News
import Newsroom
import NotificationHubs
import ServiceLifecycle
import Synchronization

/// Re-sends dead-lettered sends through the same client and retry path as `hubcast run`.
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
        public init(categories: Categories) { self.categories = categories }
    }

    let source: Source
    let client: NotificationHubClient?
    let deadLetters: (any DeadLetterSink)?
    let configuration: Configuration
    let metrics: PipelineMetrics
    let logger: Logger
    let report: @Sendable (String) -> Void
    private let counts = Mutex(ReplayCounts())
    private let examples = Mutex<[String]>([])
    private let seen = Mutex<Set<String>>([])
    private let offsets = Mutex(OffsetTracker())
    /// Sends still running per Kafka record; the record's offset is finished at zero.
    private let remaining = Mutex<[TopicPartitionOffset: Int]>([:])
    private let running = Mutex(0)
    private let limiter: Mutex<RateLimiter?>

    /// `report` receives problem lines and the progress line (stderr in the CLI).
    public init(source: Source, client: NotificationHubClient?, deadLetters: (any DeadLetterSink)?, configuration: Configuration,
                metrics: PipelineMetrics, logger: Logger, report: @escaping @Sendable (String) -> Void) {
        self.source = source
        self.client = client
        self.deadLetters = deadLetters
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        self.report = report
        limiter = Mutex(configuration.rate.map { RateLimiter(rate: $0, now: Date().timeIntervalSince1970) })
    }

    public var result: ReplayCounts { counts.withLock { $0 } }
    public var dryRunExamples: [String] { examples.withLock { $0 } }

    public func run() async throws {
        let started = ContinuousClock.now
        let progress = Task { await reportProgress(started: started) }
        defer { progress.cancel() }
        await withTaskGroup(of: Void.self) { group in
            var lastCommit = ContinuousClock.now
            var lastRecord = ContinuousClock.now
            var assignedSince: ContinuousClock.Instant?
            reading: while !Task.isCancelled && !Task.isShuttingDownGracefully {
                let batch: [(bytes: [UInt8], position: String, message: KafkaMessage?)]
                switch source {
                case .file(let reader, _):
                    let lines = await reader.next(max: 500)
                    if lines.isEmpty { break reading }
                    batch = lines.filter { !$0.bytes.isEmpty }.map { ($0.bytes, "line \($0.number)", nil) }
                case .kafka(let consumer):
                    switch await consumer.messages.nextBatch(max: 500, timeout: .milliseconds(500)) {
                    case .finished: break reading
                    case .timedOut:
                        // Idle counts only from the assignment: joining the group can take seconds.
                        if assignedSince == nil, !consumer.assignment.isEmpty { assignedSince = .now }
                        if let since = assignedSince, ContinuousClock.now - max(lastRecord, since) >= configuration.idle,
                           running.withLock({ $0 }) == 0 {
                            break reading
                        }
                        batch = []
                    case .batch(let messages):
                        lastRecord = .now
                        batch = messages.map { ($0.value, "\($0.topic)[\($0.partition)]@\($0.offset)", $0) }
                    }
                }
                for entry in batch {
                    // On shutdown, records not yet started stay uncommitted: the next replay reads them.
                    if Task.isShuttingDownGracefully || Task.isCancelled { break reading }
                    if let m = entry.message { offsets.withLock { $0.started(m.topicPartition, offset: m.offset) } }
                    let work = prepare(entry.bytes, position: entry.position)
                    if work.isEmpty {
                        finish(entry.message)
                        continue
                    }
                    if let m = entry.message { remaining.withLock { $0[TopicPartitionOffset(m.topicPartition, offset: m.offset)] = work.count } }
                    for send in work {
                        while running.withLock({ $0 }) >= configuration.concurrency, await group.next() != nil {}
                        await pace()
                        running.withLock { $0 += 1 }
                        group.addTask {
                            await self.deliver(send, of: entry.message)
                            self.running.withLock { $0 -= 1 }
                        }
                    }
                }
                if ContinuousClock.now - lastCommit >= .seconds(1) {
                    await commit()
                    lastCommit = .now
                }
            }
            await group.waitForAll()
        }
        try? await deadLetters?.flush()
        await commit()
        report(progressLine(elapsed: ContinuousClock.now - started, final: true))
    }

    /// One record's sends, or none (counted as skipped, with a reason).
    private func prepare(_ bytes: [UInt8], position: String) -> [ReplaySend] {
        counts.withLock { $0.read += 1 }
        metrics.consumed.increment()
        let record: ReplayRecord
        do {
            record = try ReplayRecord(json: bytes)
        } catch {
            counts.withLock { $0.corrupt += 1 }
            report("replay: \(position): corrupt dead-letter record (\(error)), skipped")
            return []
        }
        guard configuration.filter.accepts(record) else {
            counts.withLock { $0.filtered += 1 }
            return []
        }
        let category = record.category ?? configuration.categories.category(forTopic: record.sourceTopic)
        guard let item = try? NewsItemDecoder().decode(record.message, topicCategory: configuration.categories.category(forTopic: record.sourceTopic)),
              let category = category ?? item.category else {
            counts.withLock { $0.stillInvalid += 1 }
            metrics.invalid.increment()
            return []
        }
        if !configuration.includeExpired && item.isExpired(atEpochSeconds: Date().timeIntervalSince1970) {
            counts.withLock { $0.expired += 1 }
            metrics.expired.increment()
            return []
        }
        let planned: [PlannedSend]
        if let audience = record.audience {
            planned = [PlannedSend(tagExpression: audience, properties: TemplateProperties.build(for: item, category: category))]
        } else if let all = try? SendPlanner.plan(item, category: category) {
            planned = all
        } else {
            counts.withLock { $0.stillInvalid += 1 }
            return []
        }
        // The same (item, audience) goes out once per replay however often it was dead-lettered.
        let fresh = planned.filter { send in seen.withLock { $0.insert("\(item.id)\u{0}\(send.tagExpression)").inserted } }
        if fresh.count < planned.count {
            counts.withLock { $0.duplicates += planned.count - fresh.count }
            metrics.duplicates.increment(by: planned.count - fresh.count)
        }
        if configuration.dryRun {
            counts.withLock { c in
                c.wouldSendByCategory[category, default: 0] += fresh.count
                c.wouldSendByReason[record.reason, default: 0] += fresh.count
            }
            examples.withLock { list in
                for send in fresh where list.count < configuration.examples {
                    list.append("\(record.itemID ?? "-") [\(record.reason)] → \(send.tagExpression): \(item.headline)")
                }
            }
            return []
        }
        return fresh.map { ReplaySend(send: $0, record: record, item: item, category: category) }
    }

    private func deliver(_ work: ReplaySend, of message: KafkaMessage?) async {
        guard let client else { return }
        do {
            _ = try await client.sendTemplate(properties: work.send.properties, tagExpression: work.send.tagExpression)
            counts.withLock { $0.sent += 1 }
            metrics.sent.increment()
        } catch {
            counts.withLock { $0.failed += 1 }
            metrics.failed.increment()
            let source = KafkaMessage(topic: work.record.sourceTopic, partition: work.record.sourcePartition,
                                      offset: work.record.sourceOffset, value: work.record.message)
            let record = DeadLetterRecord(reason: error.reason.name, error: error.message, status: error.status,
                                          attempts: error.attempts + work.record.attempts, message: work.record.message,
                                          itemID: work.item.id, category: work.category, audience: work.send.tagExpression, source: source,
                                          firstAttemptAt: error.firstAttemptAt, lastAttemptAt: error.lastAttemptAt)
            do {
                try await deadLetters?.write(record)
                metrics.deadLettered.increment()
            } catch {
                // Not stored anywhere: leave the record uncommitted so the next replay sees it again.
                logger.error("Replay dead-letter write failed", metadata: ["error": "\(error)"])
                return
            }
        }
        sendEnded(message)
    }

    private func sendEnded(_ message: KafkaMessage?) {
        guard let message else { return }
        let key = TopicPartitionOffset(message.topicPartition, offset: message.offset)
        let done = remaining.withLock { r -> Bool in
            let left = (r[key] ?? 1) - 1
            r[key] = left > 0 ? left : nil
            return left <= 0
        }
        if done { finish(message) }
    }

    private func finish(_ message: KafkaMessage?) {
        guard let message else { return }
        offsets.withLock { $0.finished(message.topicPartition, offset: message.offset) }
    }

    private func commit() async {
        // A dry run leaves the group's position alone, so the real replay still sees every record.
        guard !configuration.dryRun, case .kafka(let consumer) = source else { return }
        let committable = offsets.withLock { $0.committable() }
        guard !committable.isEmpty else { return }
        do {
            try await consumer.commit(committable)
            offsets.withLock { $0.committed(committable) }
        } catch {
            logger.warning("Replay commit failed; retried with the next one", metadata: ["error": "\(error)"])
        }
    }

    /// Waits as long as `--rate` requires before the next send.
    private func pace() async {
        let wait = limiter.withLock { $0?.reserve(now: Date().timeIntervalSince1970) ?? 0 }
        if wait > 0 { try? await Task.sleep(for: .milliseconds(Int64(wait * 1000))) }
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
        let seconds = max(0.001, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        let rate = Double(c.sent + c.failed) / seconds
        var remaining: Int?
        switch source {
        case .file(_, let total): remaining = max(0, total - c.read)
        case .kafka(let consumer): remaining = Int(consumer.lag)
        }
        let eta = remaining.flatMap { r in rate > 0 ? String(format: "%.0f s", Double(r) / max(rate, Double(c.read) / seconds)) : nil } ?? "-"
        return String(format: "replay%@: read %d, sent %d, skipped %d, failed %d, %.1f sends/s%@", final ? " done" : "",
                      c.read, c.sent, c.skipped, c.failed, rate, final ? String(format: " in %.1f s", seconds) : ", ETA \(eta)")
    }
}

/// One send a replay makes, with the record it came from.
struct ReplaySend: Sendable {
    let send: PlannedSend
    let record: ReplayRecord
    let item: NewsItem
    let category: String
}
