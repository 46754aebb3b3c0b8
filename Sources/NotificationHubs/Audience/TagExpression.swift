import News

/// A Notification Hubs tag expression: tags joined by `&&`, `||`, `!` and parentheses.
public indirect enum TagExpression: Sendable, Equatable, CustomStringConvertible {
    case tag(String)
    case not(TagExpression)
    case and(TagExpression, TagExpression)
    case or(TagExpression, TagExpression)

    /// NH's limits on the number of tags in one expression.
    public static let maxTagsOrOnly = 20
    public static let maxTagsMixed = 6

    /// Why an expression was refused, with the 1-based column where the problem is when there is one.
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public let reason: String
        public let column: Int?
        public var description: String {
            column.map { "tag expression: \(reason) at column \($0)" } ?? "tag expression: \(reason)"
        }
    }

    /// Parses and checks the tag-count limits: at most 20 tags with only `||`, else at most 6.
    public init(parsing text: String) throws(Invalid) {
        var parser = TagExpressionParser(Array(text.utf8))
        let expression = try parser.parse()
        try expression.checkLimits()
        self = expression
    }

    /// Parses without the tag-count limits (for expressions about to be split).
    static func parseUnlimited(_ text: String) throws(Invalid) -> TagExpression {
        var parser = TagExpressionParser(Array(text.utf8))
        return try parser.parse()
    }

    /// Every tag occurrence, left to right.
    public var tags: [String] {
        switch self {
        case .tag(let t): [t]
        case .not(let e): e.tags
        case .and(let l, let r), .or(let l, let r): l.tags + r.tags
        }
    }

    /// True when the expression uses no operator but `||`.
    public var isOrOnly: Bool {
        switch self {
        case .tag: true
        case .or(let l, let r): l.isOrOnly && r.isOrOnly
        case .not, .and: false
        }
    }

    func checkLimits() throws(Invalid) {
        let count = tags.count
        if isOrOnly {
            guard count <= Self.maxTagsOrOnly else {
                throw Invalid(reason: "has \(count) tags joined by ||; Notification Hubs allows \(Self.maxTagsOrOnly) (hubcast splits longer OR lists itself)", column: nil)
            }
        } else {
            guard count <= Self.maxTagsMixed else {
                throw Invalid(reason: "has \(count) tags with && or !; Notification Hubs allows \(Self.maxTagsMixed)", column: nil)
            }
        }
    }

    /// Whether a device with these tags is in the audience.
    public func matches(_ deviceTags: Set<String>) -> Bool {
        switch self {
        case .tag(let t): deviceTags.contains(t)
        case .not(let e): !e.matches(deviceTags)
        case .and(let l, let r): l.matches(deviceTags) && r.matches(deviceTags)
        case .or(let l, let r): l.matches(deviceTags) || r.matches(deviceTags)
        }
    }

    /// Canonical text, parenthesised only where precedence needs it.
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
        let text = switch self {
        case .tag(let t): t
        case .not(let e): "!" + e.render(parentPrecedence: 3)
        case .and(let l, let r): l.render(parentPrecedence: 2) + " && " + r.render(parentPrecedence: 2)
        case .or(let l, let r): l.render(parentPrecedence: 1) + " || " + r.render(parentPrecedence: 1)
        }
        return precedence < parentPrecedence ? "(\(text))" : text
    }
}

/// Recursive descent over NH's grammar; precedence `!` > `&&` > `||`.
struct TagExpressionParser {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    private func invalid(_ reason: String) -> TagExpression.Invalid {
        TagExpression.Invalid(reason: reason, column: index + 1)
    }

    mutating func parse() throws(TagExpression.Invalid) -> TagExpression {
        skipSpaces()
        guard index < bytes.count else { throw TagExpression.Invalid(reason: "is empty", column: nil) }
        let expression = try parseOr()
        skipSpaces()
        guard index == bytes.count else { throw invalid("unexpected '\(Character(Unicode.Scalar(bytes[index])))'") }
        return expression
    }

    private mutating func skipSpaces() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
    }

    private mutating func consume(_ op: StaticString) -> Bool {
        skipSpaces()
        let count = op.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        for i in 0..<count where bytes[index + i] != op.utf8Start[i] { return false }
        index += count
        return true
    }

    private mutating func parseOr() throws(TagExpression.Invalid) -> TagExpression {
        var left = try parseAnd()
        while consume("||") { left = .or(left, try parseAnd()) }
        return left
    }

    private mutating func parseAnd() throws(TagExpression.Invalid) -> TagExpression {
        var left = try parseUnary()
        while consume("&&") { left = .and(left, try parseUnary()) }
        return left
    }

    private mutating func parseUnary() throws(TagExpression.Invalid) -> TagExpression {
        if consume("!") { return .not(try parseUnary()) }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws(TagExpression.Invalid) -> TagExpression {
        skipSpaces()
        guard index < bytes.count else { throw invalid("a tag or '(' is missing") }
        if bytes[index] == UInt8(ascii: "(") {
            index += 1
            let inner = try parseOr()
            guard consume(")") else { throw invalid("')' expected") }
            return .paren(inner)
        }
        let start = index
        while index < bytes.count, TagSyntax.isTagByte(bytes[index]) { index += 1 }
        guard index > start else { throw invalid("a tag is expected, found '\(Character(Unicode.Scalar(bytes[index])))'") }
        guard index - start <= TagSyntax.maxLength else {
            index = start
            throw invalid("tag longer than \(TagSyntax.maxLength) characters")
        }
        return .tag(String(decoding: bytes[start..<index], as: UTF8.self))
    }
}

private extension TagExpression {
    // Parentheses only group; the tree already says what they meant.
    static func paren(_ e: TagExpression) -> TagExpression { e }
}
