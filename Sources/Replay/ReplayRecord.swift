import News
import TextFormats

/// A dead-letter record read back for replay (schemas/dead-letter.schema.json).
public struct ReplayRecord: Sendable {
    public let reason: String
    public let error: String
    public let status: Int?
    public let itemID: String?
    public let category: String?
    /// The failed send's tag expression; nil for an invalid message.
    public let audience: String?
    /// `template` or the native platform of the failed send; nil for an invalid message, and in
    /// records written before sends had platforms (all template sends).
    public let platform: String?
    /// The hub the send failed at, when the run sent to several (`--routes`); else nil.
    public let hub: String?
    public let message: [UInt8]
    public let sourceTopic: String
    public let sourcePartition: Int32
    public let sourceOffset: Int64
    public let attempts: Int
    public let deadLetteredAt: Double

    /// Why a record is not one hubcast wrote.
    public struct Corrupt: Error, CustomStringConvertible {
        public let description: String
    }

    static let reasons: Set<String> = [
        "invalid", "throttled", "server-error", "timeout", "transport", "unauthorized", "forbidden",
        "bad-request", "not-found", "gone", "too-large", "rejected", "tls",
    ]

    /// Parses and checks one record as the schema describes it.
    public init(json bytes: [UInt8]) throws(Corrupt) {
        guard case .object(let o)? = try? JSONParser.parse(bytes) else {
            throw Corrupt(description: "not a JSON object")
        }
        func string(_ key: String) -> String? { if case .string(let s)? = o[key] { s } else { nil } }
        guard let reason = string("reason"), Self.reasons.contains(reason) else {
            throw Corrupt(description: "no known \"reason\"")
        }
        guard let message = string("message") else { throw Corrupt(description: "no \"message\"") }
        guard case .object(let source)? = o["source"], case .string(let topic)? = source["topic"] else {
            throw Corrupt(description: "no \"source.topic\"")
        }
        guard let at = string("deadLetteredAt").flatMap(Timestamp.init(rfc3339:)) else {
            throw Corrupt(description: "no RFC 3339 \"deadLetteredAt\"")
        }
        self.reason = reason
        error = string("error") ?? ""
        if case .number(let n)? = o["status"] { status = Int(n) } else { status = nil }
        itemID = string("itemId")
        category = string("category")
        audience = string("audience")
        platform = string("platform")
        hub = string("hub")
        self.message = Array(message.utf8)
        sourceTopic = topic
        if case .number(let p)? = source["partition"] { sourcePartition = Int32(p) } else { sourcePartition = 0 }
        if case .number(let off)? = source["offset"] { sourceOffset = Int64(off) } else { sourceOffset = 0 }
        if case .number(let a)? = o["attempts"] { attempts = Int(a) } else { attempts = 0 }
        deadLetteredAt = at.epochSeconds
    }
}
