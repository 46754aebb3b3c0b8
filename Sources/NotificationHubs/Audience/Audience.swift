/// Who receives one news item: one or more tag expressions, each within NH's limits.
///
/// A long OR list becomes several sends whose union is the same audience; a device that carries
/// tags from two chunks receives the item once per chunk (NH does not dedupe across sends).
public struct Audience: Sendable, Equatable {
    /// The expressions to send to, one request each.
    public let expressions: [String]

    /// Validates `text`; a pure OR list longer than NH allows is split, anything else over the limit is refused.
    public init(expression text: String) throws(TagExpression.Invalid) {
        let parsed = try TagExpression.parseUnlimited(text)
        if parsed.isOrOnly {
            self.init(orOf: Self.uniqued(parsed.tags))
        } else {
            try parsed.checkLimits()
            self.init(expressions: [parsed.description])
        }
    }

    /// A send's audience as the sample backend tags devices: the given users (each device
    /// registered by a user carries `username:<name>`), else `expression`, else the one `tag`.
    public init(users: [String]?, expression: String?, orTag tag: String) throws(TagExpression.Invalid) {
        if let users {
            self.init(orOf: users.map { "username:" + $0 })
        } else if let expression {
            try self.init(expression: expression)
        } else {
            self.init(orOf: [tag])
        }
    }

    /// Tags joined by `||`, in chunks of at most 20.
    public init(orOf tags: [String]) {
        // One tag (a category: most items) is its own expression, with no string built.
        if tags.count == 1 {
            self.init(expressions: tags)
            return
        }
        var chunks: [String] = []
        var start = 0
        while start < tags.count {
            let end = min(start + TagExpression.maxTagsOrOnly, tags.count)
            chunks.append(tags[start..<end].joined(separator: " || "))
            start = end
        }
        self.init(expressions: chunks)
    }

    private init(expressions: [String]) {
        self.expressions = expressions
    }

    private static func uniqued(_ tags: [String]) -> [String] {
        var seen = Set<String>()
        return tags.filter { seen.insert($0).inserted }
    }
}
