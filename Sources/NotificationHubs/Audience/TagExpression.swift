/// A Notification Hubs tag expression: tags joined by `&&`, `||`, `!` and parentheses.
///
/// `&&` and `||` keep all their operands in one list (`a || b || c` is one `.or` of three), not a
/// chain of pairs: the tree is only as deep as the text nests `(` and `!`, which the parser limits
/// to `maxNesting`. So the recursive walks below (and freeing the tree) stay a few hundred frames
/// deep at most, even for a 100,000-tag OR list of `users`.
public enum TagExpression: Sendable, Equatable, CustomStringConvertible {
    case tag(String)
    indirect case not(TagExpression)
    /// Two or more operands, none itself an `.and`: the parser merges `a && (b && c)` into one list.
    case and([TagExpression])
    /// Two or more operands, none itself an `.or`.
    case or([TagExpression])

    /// NH's limits on the number of tags in one expression.
    public static let maxTagsOrOnly = 20
    public static let maxTagsMixed = 6

    /// The deepest nesting of `(` and `!` accepted.
    ///
    /// NH takes at most 6 tags once `&&` or `!` appear (20 with only `||`), so an expression it
    /// would accept needs a handful of levels; 64 leaves room for generous redundant parentheses.
    /// The bound is what keeps a crafted item (32,000 `(`, or thousands of `!`) from exhausting
    /// the stack: each level costs the parser four frames and every walk over the tree one or two.
    public static let maxNesting = 64

    /// Why an expression was refused, with the 1-based column where the problem is when there is one.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public let reason: String
        public let column: Int?
        /// The reason and its column, without the "tag expression:" prefix (for a field-level message).
        public var detail: String { column.map { "\(reason) at column \($0)" } ?? reason }
        public var description: String { "tag expression: " + detail }
    }

    /// Parses and checks the tag-count limits: at most 20 tags with only `||`, else at most 6.
    public init(parsing text: String) throws(Invalid) {
        let expression = try Self.parseUnlimited(text)
        try expression.checkLimits()
        self = expression
    }

    /// Parses without the tag-count limits (for expressions about to be split); the nesting limit holds.
    static func parseUnlimited(_ text: String) throws(Invalid) -> TagExpression {
        var parser = TagExpressionParser(Array(text.utf8))
        return try parser.parse()
    }

    /// Every tag occurrence, left to right.
    public var tags: [String] {
        var tags: [String] = []
        collectTags(into: &tags)
        return tags
    }

    private func collectTags(into tags: inout [String]) {
        switch self {
        case .tag(let t): tags.append(t)
        case .not(let e): e.collectTags(into: &tags)
        case .and(let operands), .or(let operands): for e in operands { e.collectTags(into: &tags) }
        }
    }

    /// True when the expression uses no operator but `||`.
    public var isOrOnly: Bool {
        switch self {
        case .tag: true
        case .or(let operands): operands.allSatisfy(\.isOrOnly)
        case .not, .and: false
        }
    }

    func checkLimits() throws(Invalid) {
        let count = tags.count
        if isOrOnly {
            guard count <= Self.maxTagsOrOnly else {
                throw Invalid(
                    reason:
                        "has \(count) tags joined by ||; Notification Hubs allows \(Self.maxTagsOrOnly) (hubcast splits longer OR lists itself)",
                    column: nil
                )
            }
        } else {
            guard count <= Self.maxTagsMixed else {
                throw Invalid(
                    reason: "has \(count) tags with && or !; Notification Hubs allows \(Self.maxTagsMixed)",
                    column: nil
                )
            }
        }
    }

    /// Whether a device with these tags is in the audience.
    public func matches(_ deviceTags: Set<String>) -> Bool {
        switch self {
        case .tag(let t): deviceTags.contains(t)
        case .not(let e): !e.matches(deviceTags)
        case .and(let operands): operands.allSatisfy { $0.matches(deviceTags) }
        case .or(let operands): operands.contains { $0.matches(deviceTags) }
        }
    }

    /// Canonical text, parenthesised only where precedence needs it; parsing it gives this tree back.
    public var description: String { render(parentPrecedence: 0) }

    private var precedence: Int {
        switch self {
        case .or: 1
        case .and: 2
        case .not: 3
        case .tag: 4
        }
    }

    private func render(parentPrecedence: Int) -> String {
        let text =
            switch self {
            case .tag(let t): t
            case .not(let e): "!" + e.render(parentPrecedence: 3)
            case .and(let operands): operands.map { $0.render(parentPrecedence: 2) }.joined(separator: " && ")
            case .or(let operands): operands.map { $0.render(parentPrecedence: 1) }.joined(separator: " || ")
            }
        return precedence < parentPrecedence ? "(\(text))" : text
    }
}
