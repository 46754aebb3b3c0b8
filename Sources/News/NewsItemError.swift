/// Why a message is not a valid news item; safe to log and to put in a dead-letter record.
public struct NewsItemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The broad reason, usable as a metric label.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        let name: String
        public static let malformedJSON = Kind(name: "malformed-json")
        public static let schema = Kind(name: "schema")
        public static let oversize = Kind(name: "oversize")
        public static let categoryMismatch = Kind(name: "category-mismatch")
        public var description: String { name }
    }

    public let kind: Kind
    /// The JSON field at fault, when one is ("headline", "users[2]", "properties.team").
    public let field: String?
    public let reason: String

    public init(kind: Kind, field: String? = nil, reason: String) {
        self.kind = kind
        self.field = field
        self.reason = reason
    }

    static func schema(_ field: String, _ reason: String) -> NewsItemError {
        NewsItemError(kind: .schema, field: field, reason: reason)
    }

    public var description: String {
        if let field { return "field \"\(field)\" \(reason)" }
        return reason
    }
}
