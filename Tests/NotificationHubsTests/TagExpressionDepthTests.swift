import News
import TestSupport
import Testing
import TextFormats

@testable import NotificationHubs

/// The nesting limit, the flat OR/AND lists, and error messages that show what the text held.
@Suite(.onComputeThreads) struct TagExpressionDepthTests {
    static let tooDeep = TagExpression.Invalid(reason: "nests '(' and '!' more than 64 levels deep", column: 65)

    static func nested(_ depth: Int, _ inner: String = "World") -> String {
        String(repeating: "(", count: depth) + inner + String(repeating: ")", count: depth)
    }

    @Test func thirtyTwoThousandNestedParenthesesAreRefusedAtColumn65() {
        let text = Self.nested(32_000)
        #expect(text.utf8.count == 64_005, "under the 64 KB item limit, so only the parser can stop it")
        #expect(throws: Self.tooDeep) { try TagExpression(parsing: text) }
        #expect(throws: Self.tooDeep) { try Audience(expression: text) }
        #expect(throws: Self.tooDeep) {
            try Audience(users: nil, expression: text, orTag: "World")
        }
        #expect(Self.tooDeep.description == "tag expression: nests '(' and '!' more than 64 levels deep at column 65")
    }

    @Test func sixtyFourLevelsParseAndSixtyFiveDoNot() throws {
        #expect(try TagExpression(parsing: Self.nested(64)) == .tag("World"))
        #expect(throws: Self.tooDeep) { try TagExpression(parsing: Self.nested(65)) }
        // `!` and `(` share the budget: 32 of each is 64 levels.
        let mixed = String(repeating: "!(", count: 32) + "a" + String(repeating: ")", count: 32)
        var expected = TagExpression.tag("a")
        for _ in 0..<32 { expected = .not(expected) }
        #expect(try TagExpression(parsing: mixed) == expected)
        #expect(throws: Self.tooDeep) { try TagExpression(parsing: "!(" + mixed + ")") }
        // Closed levels give their budget back.
        let siblings = (0..<10).map { _ in Self.nested(60, "a") }.joined(separator: " || ")
        #expect(try TagExpression(parsing: siblings) == .or(Array(repeating: .tag("a"), count: 10)))
    }

    @Test func thousandsOfNegationsAreRefused() throws {
        #expect(throws: Self.tooDeep) { try TagExpression(parsing: String(repeating: "!", count: 50_000) + "World") }
        #expect(throws: Self.tooDeep) { try TagExpression(parsing: String(repeating: "!", count: 50_000)) }
        #expect(throws: TagExpression.Invalid(reason: "nests '(' and '!' more than 64 levels deep", column: 129)) {
            try TagExpression(parsing: String(repeating: "! ", count: 100) + "World")
        }
        #expect(try TagExpression(parsing: "!!World") == .not(.not(.tag("World"))))
        #expect(try TagExpression(parsing: "!!World").description == "!!World")
    }

    @Test func aHundredThousandTagOrListIsOneFlatNodeAndSplitsIntoChunks() throws {
        let tags = (0..<100_000).map { "username:u\($0)" }
        let text = tags.joined(separator: " || ")
        let expression = try TagExpression.parseUnlimited(text)
        #expect(expression == .or(tags.map(TagExpression.tag)))
        #expect(expression.isOrOnly && expression.tags == tags)
        #expect(expression.matches(["username:u99999"]) && !expression.matches(["username:x"]))
        #expect(expression.description == text)
        #expect(try Audience(expression: text).expressions.count == 5_000)
        #expect(throws: TagExpression.Invalid.self) { try TagExpression(parsing: text) }

        let and = tags.joined(separator: " && ")
        #expect(try TagExpression.parseUnlimited(and).tags.count == 100_000)
        #expect(
            throws: TagExpression.Invalid(
                reason: "has 100000 tags with && or !; Notification Hubs allows 6",
                column: nil
            )
        ) {
            try Audience(expression: and)
        }
    }

    @Test func theSameOperatorMergesIntoOneList() throws {
        let abc = TagExpression.or([.tag("a"), .tag("b"), .tag("c")])
        for text in ["a || b || c", "(a || b) || c", "a || (b || c)", "((a)) || ((b || (c)))"] {
            #expect(try TagExpression(parsing: text) == abc, "\(text)")
        }
        #expect(
            try TagExpression(parsing: "(a && b) && (c && !d)")
                == .and([.tag("a"), .tag("b"), .tag("c"), .not(.tag("d"))])
        )
        let grouped = try TagExpression(parsing: "(a || b) && !(c && d)")
        #expect(grouped == .and([.or([.tag("a"), .tag("b")]), .not(.and([.tag("c"), .tag("d")]))]))
        #expect(grouped.description == "(a || b) && !(c && d)")
    }

    @Test(arguments: [
        ("World && é", "tag expression: a tag is expected, found 'é' at column 10"),
        ("ニュース", "tag expression: a tag is expected, found 'ニ' at column 1"),
        ("World\u{1B}[31m", "tag expression: unexpected U+001B at column 6"),
        ("World\nSports", "tag expression: unexpected U+000A at column 6"),
        ("World || \u{202E}x", "tag expression: a tag is expected, found U+202E at column 10"),
    ])
    func messagesShowUnicodeAndEscapeControlCharacters(text: String, message: String) {
        #expect { try TagExpression(parsing: text) } throws: { ($0 as? TagExpression.Invalid)?.description == message }
    }
}

@Suite struct LegibleTextTests {
    @Test func printableUnicodeStaysAndControlsAreEscaped() {
        #expect(LegibleText.quoted("Café ニュース 😀") == #""Café ニュース 😀""#)
        #expect(LegibleText.quoted("a\u{1B}[31m\n\t\"\\") == #""a\u{1B}[31m\n\t\"\\""#)
        #expect(LegibleText.sanitized("say \"x\"\u{202E}\u{0}") == #"say "x"\u{202E}\u{0}"#)
        #expect(LegibleText.character("é") == "'é'")
        #expect(LegibleText.character("\u{7F}") == "U+007F")
    }
}
