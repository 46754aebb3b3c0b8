import Kafka
import NotificationHubs

/// One template send of a news item, with what its outcome needs: the item, its category, and
/// the Kafka record it came from (for end-to-end latency and the dead-letter record).
public struct NewsSend: Sendable {
    public let planned: PlannedSend
    public let itemID: String
    public let category: String
    public let source: KafkaMessage

    public init(planned: PlannedSend, itemID: String, category: String, source: KafkaMessage) {
        self.planned = planned
        self.itemID = itemID
        self.category = category
        self.source = source
    }

    /// The (item, audience) pair that the delivered-sends window remembers.
    var deliveryKey: String { itemID + "\u{0}" + planned.tagExpression }
}
