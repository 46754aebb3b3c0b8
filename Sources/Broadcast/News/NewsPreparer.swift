import Foundation
import Kafka
import Logging
import News
import NotificationHubs

/// `run`'s preparation of one Kafka record: decode, validate against the topic's category, drop
/// expired items and sends already delivered, plan the sends. Nothing here blocks.
public struct NewsPreparer: RecordPreparer {
    let categories: Categories
    let decoder: NewsItemDecoder
    let delivered: DeliveredSends
    let metrics: PipelineMetrics
    let logger: Logger
    let clock: @Sendable () -> Double
    /// The priority of items of these categories that name none.
    let categoryPriority: [String: Priority]
    /// Seconds after its Kafka timestamp an item without `expiresAt` may still go; nil: no bound.
    let maxAge: Double?
    /// Takes the canary topic's records, when the canary is on.
    let canary: Canary?
    /// Which hub each item goes to.
    let routes: HubRoutes

    public init(
        categories: Categories,
        maxMessageBytes: Int,
        delivered: DeliveredSends,
        metrics: PipelineMetrics,
        logger: Logger,
        categoryPriority: [String: Priority] = [:],
        maxAge: Duration? = nil,
        canary: Canary? = nil,
        routes: HubRoutes = .single("hub"),
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.categories = categories
        self.routes = routes
        self.categoryPriority = categoryPriority
        self.maxAge = maxAge?.inSeconds
        self.canary = canary
        decoder = NewsItemDecoder(maxMessageBytes: maxMessageBytes)
        self.delivered = delivered
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
    }

    public mutating func prepare(_ message: KafkaMessage) -> PipelineEngine<NewsSend>.Work {
        metrics.consumed.increment()
        if let canary, message.topic == canary.configuration.topic { return canary.work(for: message) }
        let topicCategory = categories.category(forTopic: message.topic)
        let item: NewsItem
        do {
            item = try decoder.decode(message.value, topicCategory: topicCategory)
        } catch {
            return invalid(message, error.description, itemID: nil, category: topicCategory)
        }
        guard let category = topicCategory ?? item.category else {
            return invalid(message, "topic \(message.topic) maps to no category", itemID: item.id, category: nil)
        }
        var hub = 0
        if !routes.isSingle {
            switch routes.hub(category: category, tenant: item.tenant) {
            case .success(let routed): hub = routed
            case .failure(let error):
                return invalid(message, "\(error.field): \(error)", itemID: item.id, category: category)
            }
        }
        let now = clock()
        if item.isExpired(atEpochSeconds: now) {
            metrics.expired.increment()
            return .done
        }
        // Without a Kafka timestamp the age counts from now: the bound still holds for retries. An
        // item for later ages from its `sendAt`.
        let produced = message.timestampMs.map { Double($0) / 1000 } ?? now
        let sendAt = item.sendAt?.epochSeconds ?? 0
        let staleAt = item.expiresAt?.epochSeconds ?? maxAge.map { max(produced, sendAt) + $0 }
        if let staleAt, staleAt <= now {
            metrics.stale.increment()
            let age = "\(Int(now - staleAt + (maxAge ?? 0))) s ago, over the maximum age of \(Int(maxAge ?? 0)) s"
            return .deadLetter(
                DeadLetterRecord(
                    reason: FailureReason.stale.name,
                    error: (sendAt > produced ? "due " : "produced ") + age,
                    message: message.value,
                    itemID: item.id,
                    category: category,
                    source: message
                )
            )
        }
        let priority = item.priority ?? categoryPriority[category] ?? .normal
        let planned: [PlannedSend]
        do {
            planned = try SendPlanner.plan(item, category: category, priority: priority, expiresAt: staleAt, now: now)
        } catch {
            return invalid(message, error.description, itemID: item.id, category: category)
        }
        let sends = planned.map {
            NewsSend(
                planned: $0,
                itemID: item.id,
                category: category,
                source: message,
                priority: priority,
                staleAt: staleAt,
                hub: hub
            )
        }
        var skippedFrom: RecentKeys.Origin?
        let fresh = sends.filter {
            guard let origin = delivered.contains($0.deliveryKey) else { return true }
            skippedFrom = origin
            return false
        }
        if fresh.isEmpty, let skippedFrom {
            metrics.skipped(skippedFrom).increment()
            return .done
        }
        return .sends(fresh, priority: priority, freshFor: staleAt.map { .seconds(max(0, $0 - now)) }, hub: hub)
    }

    private func invalid(
        _ message: KafkaMessage,
        _ error: String,
        itemID: String?,
        category: String?
    ) -> PipelineEngine<NewsSend>.Work {
        metrics.invalid.increment()
        logger.warning(
            "Invalid news item",
            metadata: [
                "topic": "\(message.topic)", "partition": "\(message.partition)",
                "offset": "\(message.offset)", "error": "\(error)",
            ]
        )
        return .deadLetter(
            DeadLetterRecord(
                reason: FailureReason.invalid.name,
                error: error,
                message: message.value,
                itemID: itemID,
                category: category,
                source: message
            )
        )
    }
}
