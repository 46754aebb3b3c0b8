import News
import Testing
import TextFormats

@testable import NotificationHubs

@Suite struct TagExpressionTests {
    @Test func precedenceIsNotThenAndThenOr() throws {
        let e = try TagExpression(parsing: "World || Politics && !Sports")
        #expect(e == .or([.tag("World"), .and([.tag("Politics"), .not(.tag("Sports"))])]))
        #expect(
            try TagExpression(parsing: "(World || Politics) && !Sports").description == "(World || Politics) && !Sports"
        )
        #expect(try TagExpression(parsing: "username:alice").tags == ["username:alice"])
    }

    /// The tags the hub gives installations parse wherever expressions do, and match as tags.
    @Test func systemTagsAreTags() throws {
        let e = try TagExpression(parsing: "$InstallationId:{inst-a1} || ($UserId:{alice@example.com=1} && !World)")
        #expect(
            e
                == .or([
                    .tag("$InstallationId:{inst-a1}"),
                    .and([.tag("$UserId:{alice@example.com=1}"), .not(.tag("World"))]),
                ])
        )
        #expect(e.matches(["$InstallationId:{inst-a1}"]) && !e.matches(["$InstallationId:{inst-a2}"]))
        #expect(try TagExpression(parsing: e.description) == e)
        #expect(TagSyntax.isSystemTag("$InstallationId:{0f8fad5b-d9cb-469f-a165-70867728950e}"))
        #expect(
            !TagSyntax.isSystemTag("$InstallationId:{x}y")
                && !TagSyntax.isSystemTag("$UserId:{" + String(repeating: "a", count: 257) + "}")
        )
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
        (
            "World || $x",
            "tag expression: '$' starts only the system tags $InstallationId:{id} and $UserId:{id} (the id of letters, digits and -_@#.:=); other $ tags are reserved at column 10"
        ),
        (
            "$Other:{x}",
            "tag expression: '$' starts only the system tags $InstallationId:{id} and $UserId:{id} (the id of letters, digits and -_@#.:=); other $ tags are reserved at column 1"
        ),
        (
            "$InstallationId:{}",
            "tag expression: '$' starts only the system tags $InstallationId:{id} and $UserId:{id} (the id of letters, digits and -_@#.:=); other $ tags are reserved at column 1"
        ),
        (
            "$InstallationId:{a b}",
            "tag expression: '$' starts only the system tags $InstallationId:{id} and $UserId:{id} (the id of letters, digits and -_@#.:=); other $ tags are reserved at column 1"
        ),
        (
            "$installationid:{a}",
            "tag expression: '$' starts only the system tags $InstallationId:{id} and $UserId:{id} (the id of letters, digits and -_@#.:=); other $ tags are reserved at column 1"
        ),
        (
            "World && $UserId:{alice",
            "tag expression: '$' starts only the system tags $InstallationId:{id} and $UserId:{id} (the id of letters, digits and -_@#.:=); other $ tags are reserved at column 10"
        ),
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
        let audience = try Audience(users: users, expression: nil, orTag: "World")
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
        #expect(try Audience(users: nil, expression: nil, orTag: "World").expressions == ["World"])
        #expect(
            try Audience(users: nil, expression: "Politics&&!Sports", orTag: "World").expressions == [
                "Politics && !Sports"
            ]
        )
        let longOr = (1...30).map { "t\($0)" }.joined(separator: "||")
        #expect(try Audience(expression: longOr).expressions.count == 2)
        #expect(throws: TagExpression.Invalid.self) { try Audience(expression: "a && b && c && d && e && f && g") }
    }
}
