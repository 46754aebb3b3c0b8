import News
@testable import NotificationHubs
import Testing

@Suite struct TagExpressionTests {
    @Test func precedenceIsNotThenAndThenOr() throws {
        let e = try TagExpression(parsing: "World || Politics && !Sports")
        #expect(e == .or([.tag("World"), .and([.tag("Politics"), .not(.tag("Sports"))])]))
        #expect(try TagExpression(parsing: "(World || Politics) && !Sports").description == "(World || Politics) && !Sports")
        #expect(try TagExpression(parsing: "username:alice").tags == ["username:alice"])
    }

    @Test func evaluatesAgainstDeviceTags() throws {
        let e = try TagExpression(parsing: "(World || Business) && !Sports")
        #expect(e.matches(["World"]))
        #expect(e.matches(["Business", "Science"]))
        #expect(!e.matches(["World", "Sports"]))
        #expect(!e.matches(["Science"]))
    }

    @Test(arguments: [
        ("", "tag expression: is empty"),
        ("World &&", "tag expression: a tag or '(' is missing at column 9"),
        ("World & Politics", "tag expression: unexpected '&' at column 7"),
        ("(World || Sports", "tag expression: ')' expected at column 17"),
        ("World News", "tag expression: unexpected 'N' at column 7"),
        ("World || $x", "tag expression: a tag is expected, found '$' at column 10"),
    ])
    func invalidExpressionsPointAtTheProblem(text: String, message: String) {
        #expect(throws: TagExpression.Invalid.self) { try TagExpression(parsing: text) }
        do { _ = try TagExpression(parsing: text) } catch { #expect(error.description == message) }
    }

    @Test func limitsAre20ForOrAnd6Otherwise() throws {
        let tags = (1...21).map { "t\($0)" }
        _ = try TagExpression(parsing: tags.prefix(20).joined(separator: " || "))
        #expect(throws: TagExpression.Invalid.self) { try TagExpression(parsing: tags.joined(separator: " || ")) }
        _ = try TagExpression(parsing: "a && b && c && d && e && !f")
        #expect(throws: TagExpression.Invalid.self) { try TagExpression(parsing: "a && b && c && d && e && f && g") }
        #expect(throws: TagExpression.Invalid.self) { try TagExpression(parsing: "(a || b || c || d || e || f) && g") }
        let long = String(repeating: "x", count: 121)
        #expect(throws: TagExpression.Invalid.self) { try TagExpression(parsing: long) }
    }
}

@Suite struct AudienceTests {
    @Test func fortyFiveUsersBecomeThreeSendsReachingTheSameAudience() throws {
        let users = (1...45).map { "user\($0)" }
        let item = NewsItem(id: "x", headline: "h", users: users)
        let audience = try Audience(for: item, category: "World")
        #expect(audience.expressions.count == 3)
        var union = Set<String>()
        for expression in audience.expressions {
            let parsed = try TagExpression(parsing: expression)
            #expect(parsed.isOrOnly && parsed.tags.count <= 20)
            union.formUnion(parsed.tags)
        }
        #expect(union == Set(users.map { "username:" + $0 }))
    }

    @Test func categoryTagOrTagExpressionOrUsers() throws {
        #expect(try Audience(for: NewsItem(id: "a", headline: "h"), category: "World").expressions == ["World"])
        #expect(try Audience(for: NewsItem(id: "a", headline: "h", tagExpression: "Politics&&!Sports"), category: "World").expressions
                == ["Politics && !Sports"])
        let longOr = (1...30).map { "t\($0)" }.joined(separator: "||")
        #expect(try Audience(expression: longOr).expressions.count == 2)
        #expect(throws: TagExpression.Invalid.self) { try Audience(expression: "a && b && c && d && e && f && g") }
    }
}
