import Kafka
import News
import NotificationHubs

/// One send of a news item (a template, or one platform's payload), with what its outcome needs:
/// the item, its category, and the Kafka record it came from (for end-to-end latency and the
/// dead-letter record).
public struct NewsSend: Sendable {
    public var planned: PlannedSend { storage.fields.planned }
    public var itemID: String { storage.fields.itemID }
    public var category: String { storage.fields.category }
    public var source: KafkaMessage { storage.fields.source }
    public var priority: Priority { storage.fields.priority }
    /// Epoch seconds from which it may no longer go (its `expiresAt`, or its Kafka timestamp plus
    /// the maximum age); nil: no bound.
    public var staleAt: Double? { storage.fields.staleAt }
    /// A canary: its outcome goes to the canary, never to the dead letters or the news metrics.
    public var isCanary: Bool { storage.fields.isCanary }
    /// The number of the hub it goes to (`HubRoutes`).
    public var hub: Int { storage.fields.hub }
    /// The send's key in the delivered-sends window (`LedgerKey.processKey`). Computed once: the
    /// preparer checks it and the sender marks it.
    var deliveryKey: Int { storage.fields.deliveryKey }

    /// One reference: a send is copied into the engine's lanes, its actions and the sender's
    /// completion, and as a struct of seven strings and arrays each copy retained (and each drop
    /// released) every one of them not short enough to be stored inline. In a profile of a
    /// 100,000-item run, copying and dropping sends was a fifth of the retains and releases on
    /// the pool.
    private let storage: Storage

    private final class Storage: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private struct Fields: Sendable {
        let planned: PlannedSend
        let itemID: String
        let category: String
        let source: KafkaMessage
        let priority: Priority
        let staleAt: Double?
        let isCanary: Bool
        let hub: Int
        let deliveryKey: Int
    }

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
        storage = Storage(
            Fields(
                planned: planned,
                itemID: itemID,
                category: category,
                source: source,
                priority: priority,
                staleAt: staleAt,
                isCanary: isCanary,
                hub: hub,
                deliveryKey: LedgerKey.processKey(
                    itemID: itemID,
                    platform: planned.platform,
                    audience: planned.tagExpression
                )
            )
        )
    }
}
