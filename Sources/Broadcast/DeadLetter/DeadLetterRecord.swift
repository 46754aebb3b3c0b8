import Foundation
import Kafka
import News
import NotificationHubs
import TextFormats

/// A send (or a message) that will not be delivered, with everything needed to replay it
/// (schemas/dead-letter.schema.json).
public struct DeadLetterRecord: Sendable {
    /// `invalid`, `throttled`, `server-error`, `unauthorized`, … (FailureReason names).
    public var reason: String
    public var error: String
    public var status: Int?
    public var attempts: Int
    /// The original Kafka message value, byte for byte (as UTF-8 text).
    public var message: [UInt8]
    public var itemID: String?
    public var category: String?
    /// The tag expression of the failed send; nil for an invalid message.
    public var audience: String?
    /// `template` or the native platform of the failed send; nil for an invalid message.
    public var platform: String?
    /// The name of the hub the send failed at, when the pipeline sends to several; else nil.
    public var hub: String?
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var firstAttemptAt: Double?
    public var lastAttemptAt: Double?
    public var deadLetteredAt: Double

    public init(
        reason: String,
        error: String,
        status: Int? = nil,
        attempts: Int = 0,
        message: [UInt8],
        itemID: String? = nil,
        category: String? = nil,
        audience: String? = nil,
        platform: String? = nil,
        hub: String? = nil,
        source: KafkaMessage,
        firstAttemptAt: Double? = nil,
        lastAttemptAt: Double? = nil,
        deadLetteredAt: Double = Date().timeIntervalSince1970
    ) {
        self.reason = reason
        self.error = error
        self.status = status
        self.attempts = attempts
        self.message = message
        self.itemID = itemID
        self.category = category
        self.audience = audience
        self.platform = platform
        self.hub = hub
        topic = source.topic
        partition = source.partition
        offset = source.offset
        self.firstAttemptAt = firstAttemptAt
        self.lastAttemptAt = lastAttemptAt
        self.deadLetteredAt = deadLetteredAt
    }

    /// One JSON object; `item` holds the original message when it is a JSON object.
    public var json: [UInt8] {
        var w = JSONWriter(reservingCapacity: message.count + 512)
        w.beginObject()
        w.member("reason", reason)
        w.member("error", error)
        w.key("status")
        if let status { w.number(Int64(status)) } else { w.null() }
        w.key("attempts")
        w.number(Int64(attempts))
        w.member("itemId", itemID)
        w.member("category", category)
        w.key("audience")
        if let audience { w.string(audience) } else { w.null() }
        w.member("platform", platform)
        if let hub { w.member("hub", hub) }
        w.key("source")
        w.beginObject()
        w.member("topic", topic)
        w.key("partition")
        w.number(Int64(partition))
        w.key("offset")
        w.number(offset)
        w.endObject()
        w.member("message", String(decoding: message, as: UTF8.self))
        if case .object? = try? JSONParser.parse(message) {
            w.key("item")
            w.raw(message)
        }
        w.member("firstAttemptAt", firstAttemptAt.map(Self.rfc3339))
        w.member("lastAttemptAt", lastAttemptAt.map(Self.rfc3339))
        w.member("deadLetteredAt", Self.rfc3339(deadLetteredAt))
        w.endObject()
        return w.bytes
    }

    static func rfc3339(_ epoch: Double) -> String { CivilDate.rfc3339(epochSeconds: epoch, milliseconds: true) }
}
