import Kafka
import News
import NotificationHubs

/// One send of a news item (a template, or one platform's payload), with what its outcome needs:
/// the item, its category, and the Kafka record it came from (for end-to-end latency and the
/// dead-letter record).
public struct NewsSend: Sendable {
    public let planned: PlannedSend
    public let itemID: String
    public let category: String
    public let source: KafkaMessage
    public let priority: Priority
    /// Epoch seconds from which it may no longer go (its `expiresAt`, or its Kafka timestamp plus
    /// the maximum age); nil: no bound.
    public let staleAt: Double?
    /// A canary: its outcome goes to the canary, never to the dead letters or the news metrics.
    public let isCanary: Bool
    /// The (item, platform, audience) triple as 64 bits, for the delivered-sends window: it holds
    /// 100,000 of them, and as strings they were a few megabytes and two allocations per send. Two
    /// different triples share a key with odds of about 1 in 10¹⁴ per item over a full window (a send skipped
    /// once); the hash is seeded per process, so no input can aim at it. Computed once: the
    /// preparer checks it and the sender marks it.
    let deliveryKey: Int

    public init(
        planned: PlannedSend,
        itemID: String,
        category: String,
        source: KafkaMessage,
        priority: Priority = .normal,
        staleAt: Double? = nil,
        isCanary: Bool = false
    ) {
        self.planned = planned
        self.itemID = itemID
        self.category = category
        self.source = source
        self.priority = priority
        self.staleAt = staleAt
        self.isCanary = isCanary
        var hasher = Hasher()
        hasher.combine(itemID)
        hasher.combine(planned.notification.format)
        hasher.combine(planned.tagExpression)
        deliveryKey = hasher.finalize()
    }
}
