import Broadcast
import Foundation
import Kafka
import News
import NotificationHubs

/// One dead-letter record → the sends to make again: parse, filter, re-validate, skip expired
/// items, plan, and drop (item, platform, audience) triples this replay already has. Runs on the
/// engine's loop.
struct ReplayPreparer: RecordPreparer {
    let configuration: Replayer.Configuration
    let tally: ReplayTally
    let metrics: PipelineMetrics
    let report: @Sendable (String) -> Void
    /// (item id, platform, audience) triples already planned by this replay.
    private var seen: Set<String> = []
    /// The same triples (`LedgerKey.processKey`) the delivered-sends ledger says the hub accepted.
    let delivered: Set<Int>
    /// The hubs a replay may send to: a record goes back to the hub it failed at (its `hub`), else
    /// to the hub its item's routes name.
    let routes: HubRoutes

    init(
        configuration: Replayer.Configuration,
        tally: ReplayTally,
        metrics: PipelineMetrics,
        delivered: Set<Int> = [],
        routes: HubRoutes = .single("hub"),
        report: @escaping @Sendable (String) -> Void
    ) {
        self.configuration = configuration
        self.delivered = delivered
        self.routes = routes
        self.tally = tally
        self.metrics = metrics
        self.report = report
    }

    mutating func prepare(_ message: KafkaMessage) -> PipelineEngine<ReplaySend>.Work {
        guard !message.value.isEmpty else { return .done }
        tally.count { $0.read += 1 }
        metrics.consumed.increment()
        let record: ReplayRecord
        do {
            record = try ReplayRecord(json: message.value)
        } catch {
            tally.count { $0.corrupt += 1 }
            report("replay: \(position(of: message)): corrupt dead-letter record (\(error)), skipped")
            return .done
        }
        guard configuration.filter.accepts(record) else {
            tally.count { $0.filtered += 1 }
            return .done
        }
        let topicCategory = configuration.categories.category(forTopic: record.sourceTopic)
        guard let item = try? NewsItemDecoder().decode(record.message, topicCategory: topicCategory),
            let category = record.category ?? topicCategory ?? item.category
        else {
            tally.count { $0.stillInvalid += 1 }
            metrics.invalid.increment()
            return .done
        }
        guard let hub = hub(of: record, item: item, category: category, message: message) else {
            tally.count { $0.noHub += 1 }
            return .done
        }
        if !configuration.includeExpired && item.isExpired(atEpochSeconds: Date().timeIntervalSince1970) {
            tally.count { $0.expired += 1 }
            metrics.expired.increment()
            return .done
        }
        // A record of one failed send replays that send: its audience, and its platform (a record
        // without one is from a template send).
        guard
            let planned = try? SendPlanner.plan(
                item,
                category: category,
                priority: item.priority ?? .normal,
                expiresAt: item.expiresAt?.epochSeconds,
                now: Date().timeIntervalSince1970,
                audience: record.audience,
                platform: record.audience == nil ? nil : record.platform ?? "template"
            ), !planned.isEmpty
        else {
            tally.count { $0.stillInvalid += 1 }
            return .done
        }
        // A send the hub already accepted (as the ledger says) does not go again.
        let undelivered = planned.filter {
            !delivered.contains(
                LedgerKey.processKey(itemID: item.id, platform: $0.platform, audience: $0.tagExpression)
            )
        }
        if undelivered.count < planned.count {
            tally.count { $0.deduplicated += planned.count - undelivered.count }
            metrics.deduplicated.increment(by: planned.count - undelivered.count)
        }
        // The same send goes out once per replay however often it was dead-lettered.
        let fresh = undelivered.filter {
            seen.insert(item.id + "\u{0}" + $0.platform + "\u{0}" + $0.tagExpression).inserted
        }
        if fresh.count < undelivered.count {
            tally.count { $0.duplicates += undelivered.count - fresh.count }
            metrics.duplicates.increment(by: undelivered.count - fresh.count)
        }
        if configuration.dryRun {
            tally.count { c in
                c.wouldSendByCategory[category, default: 0] += fresh.count
                c.wouldSendByReason[record.reason, default: 0] += fresh.count
                if !routes.isSingle { c.wouldSendByHub[routes.hubs[hub], default: 0] += fresh.count }
            }
            for send in fresh {
                tally.example("\(record.itemID ?? "-") [\(record.reason)] → \(send.tagExpression): \(item.headline)")
            }
            return .done
        }
        let sends = fresh.map {
            ReplaySend(ticket: tally.nextTicket(), send: $0, record: record, item: item, category: category, hub: hub)
        }
        tally.planned(sends)
        // No maximum age: a replay is a decision to send what is old.
        return .sends(sends, priority: item.priority ?? .normal, hub: hub)
    }

    /// The hub a record goes back to: the one it failed at, if the routes name it; else the one
    /// its item's routes name. nil (reported): neither.
    private func hub(of record: ReplayRecord, item: NewsItem, category: String, message: KafkaMessage) -> Int? {
        if routes.isSingle { return 0 }
        if let name = record.hub, let hub = routes.hubs.firstIndex(of: name) { return hub }
        switch routes.hub(category: category, tenant: item.tenant) {
        case .success(let hub): return hub
        case .failure(let error):
            report("replay: \(position(of: message)): \(error.field): \(error), skipped")
            return nil
        }
    }

    private func position(of message: KafkaMessage) -> String {
        message.topic == FileRecordSource.partition.topic
            ? "line \(message.offset)" : "\(message.topic)[\(message.partition)]@\(message.offset)"
    }
}

/// One send a replay makes, with the record it came from.
struct ReplaySend: Sendable {
    /// This send's number in the replay, by which the tally knows it is still pending.
    let ticket: Int
    let send: PlannedSend
    let record: ReplayRecord
    let item: NewsItem
    let category: String
    /// The number of the hub it goes to.
    let hub: Int
}
