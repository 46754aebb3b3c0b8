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
    /// The number of the hub it goes to (`HubRoutes`).
    public let hub: Int
    /// The send's key in the delivered-sends window (`LedgerKey.processKey`). Computed once: the
    /// preparer checks it and the sender marks it.
    let deliveryKey: Int

    public init(
        planned: PlannedSend,
        itemID: String,
        category: String,
        source: KafkaMessage,
        priority: Priority = .normal,
        staleAt: Double? = nil,
        isCanary: Bool = false,
        hub: Int = 0
    ) {
        self.planned = planned
        self.itemID = itemID
        self.category = category
        self.source = source
        self.priority = priority
        self.staleAt = staleAt
        self.isCanary = isCanary
        self.hub = hub
        deliveryKey = LedgerKey.processKey(
            itemID: itemID,
            platform: planned.platform,
            audience: planned.tagExpression
        )
    }
}
