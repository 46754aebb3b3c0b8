import TextFormats

/// One send as the delivered-sends ledger knows it across processes: the hub, the item, the
/// platform and the audience. Stored as the record's key, a JSON array of the four strings
/// (`["sb://ns/hub","item-1","template","World"]`): readable with any Kafka tool, unambiguous
/// whatever an item id holds, and compacted to one record per send.
public struct LedgerKey: Hashable, Sendable {
    public let hub: String
    public let itemID: String
    public let platform: String
    public let audience: String

    public init(hub: String, itemID: String, platform: String, audience: String) {
        self.hub = hub
        self.itemID = itemID
        self.platform = platform
        self.audience = audience
    }

    /// The record key's bytes.
    public var encoded: [UInt8] {
        var w = JSONWriter(reservingCapacity: 32 + hub.utf8.count + itemID.utf8.count + audience.utf8.count)
        w.beginArray()
        w.string(hub)
        w.string(itemID)
        w.string(platform)
        w.string(audience)
        w.endArray()
        return w.bytes
    }

    /// A record key written by `encoded`; nil for anything else (the ledger's topic may hold
    /// records it did not write).
    public init?(decoding bytes: [UInt8]) {
        guard case .array(let fields)? = try? JSONParser.parse(bytes), fields.count == 4,
            case .string(let hub) = fields[0], case .string(let itemID) = fields[1],
            case .string(let platform) = fields[2], case .string(let audience) = fields[3]
        else { return nil }
        self.init(hub: hub, itemID: itemID, platform: platform, audience: audience)
    }

    /// The key this process remembers the send by (`DeliveredSends`): 64 bits where the strings
    /// were a few megabytes for 100,000 sends. Two different sends share it with odds of about
    /// 1 in 10¹⁴ per send over a full window (a send skipped once); Swift's hash is seeded per
    /// process, so no input can aim at it. The hub is not in it: one process sends to one hub.
    public var processKey: Int { Self.processKey(itemID: itemID, platform: platform, audience: audience) }

    public static func processKey(itemID: String, platform: String, audience: String) -> Int {
        var hasher = Hasher()
        hasher.combine(itemID)
        hasher.combine(platform)
        hasher.combine(audience)
        return hasher.finalize()
    }
}
