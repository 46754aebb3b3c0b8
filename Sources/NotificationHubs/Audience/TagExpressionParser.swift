import TextFormats

/// Recursive descent over NH's grammar; precedence `!` > `&&` > `||`.
///
/// Recursion happens only at `(`, and every `(` and `!` counts against `TagExpression.maxNesting`,
/// so no input can take the parser more than a few hundred frames deep. Runs of `!` are read in a
/// loop, and runs of `&&` or `||` become one operand list.
struct TagExpressionParser {
    private let bytes: [UInt8]
    private var index = 0
    /// `(` still open plus `!` still applying at the current position.
    private var nesting = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    private func invalid(_ reason: String) -> TagExpression.Invalid {
        TagExpression.Invalid(reason: reason, column: index + 1)
    }

    mutating func parse() throws(TagExpression.Invalid) -> TagExpression {
        skipSpaces()
        guard index < bytes.count else { throw TagExpression.Invalid(reason: "is empty", column: nil) }
        let expression = try parse(.or)
        skipSpaces()
        guard index == bytes.count else { throw invalid("unexpected \(characterHere)") }
        return expression
    }

    /// The character at `index` as a message shows it (decoded, so "é" is not two Latin-1 bytes).
    private var characterHere: String {
        var iterator = bytes[index...].makeIterator()
        var decoder = UTF8()
        guard case .scalarValue(let scalar) = decoder.decode(&iterator) else {
            return LegibleText.character("\u{FFFD}")
        }
        return LegibleText.character(scalar)
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

    /// One more level of `(` or `!` at `index`, refused past the limit.
    private mutating func enter() throws(TagExpression.Invalid) {
        guard nesting < TagExpression.maxNesting else {
            throw invalid("nests '(' and '!' more than \(TagExpression.maxNesting) levels deep")
        }
        nesting += 1
    }

    /// A run of one operator, `||` (loosest) or `&&`, as one operand list; a parenthesised run of the
    /// same operator joins the list, so `(a || b) || c` and `a || b || c` are the same tree.
    private mutating func parse(_ junction: Junction) throws(TagExpression.Invalid) -> TagExpression {
        var operands: [TagExpression] = []
        repeat {
            let operand = junction == .or ? try parse(.and) : try parseUnary()
            operands += junction.operands(of: operand) ?? [operand]
        } while consume(junction.symbol)
        return operands.count == 1 ? operands[0] : junction.join(operands)
    }

    private mutating func parseUnary() throws(TagExpression.Invalid) -> TagExpression {
        var negations = 0
        while true {
            skipSpaces()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "!") else { break }
            try enter()
            index += 1
            negations += 1
        }
        var expression = try parsePrimary()
        for _ in 0..<negations { expression = .not(expression) }
        nesting -= negations
        return expression
    }

    private mutating func parsePrimary() throws(TagExpression.Invalid) -> TagExpression {
        skipSpaces()
        guard index < bytes.count else { throw invalid("a tag or '(' is missing") }
        if bytes[index] == UInt8(ascii: "(") {
            try enter()
            index += 1
            // Parentheses only group; the tree already says what they meant.
            let inner = try parse(.or)
            guard consume(")") else { throw invalid("')' expected") }
            nesting -= 1
            return inner
        }
        let start = index
        if bytes[index] == UInt8(ascii: "$") {
            guard let length = TagSyntax.systemTagLength(bytes[index...]) else {
                throw invalid(
                    "'$' starts only the system tags $InstallationId:{id} and $UserId:{id} (the id of letters, digits and -_@#.:=); other $ tags are reserved"
                )
            }
            index += length
            return .tag(String(decoding: bytes[start..<index], as: UTF8.self))
        }
        while index < bytes.count, TagSyntax.isTagByte(bytes[index]) { index += 1 }
        guard index > start else { throw invalid("a tag is expected, found \(characterHere)") }
        guard index - start <= TagSyntax.maxLength else {
            index = start
            throw invalid("tag longer than \(TagSyntax.maxLength) characters")
        }
        return .tag(String(decoding: bytes[start..<index], as: UTF8.self))
    }
}

/// The two binary operators, loosest first.
private enum Junction {
    case or, and

    var symbol: StaticString {
        switch self {
        case .or: "||"
        case .and: "&&"
        }
    }

    /// The operands of `e` when it is already a run of this operator.
    func operands(of e: TagExpression) -> [TagExpression]? {
        switch (self, e) {
        case (.or, .or(let operands)), (.and, .and(let operands)): operands
        default: nil
        }
    }

    func join(_ operands: [TagExpression]) -> TagExpression {
        switch self {
        case .or: .or(operands)
        case .and: .and(operands)
        }
    }
}
