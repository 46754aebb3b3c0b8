import Broadcast
import News
import NotificationHubs
import Testing

extension PlannedSend {
    /// A template send's properties; none for a native send.
    var properties: [(String, String)] {
        if case .template(let properties) = notification { return properties }
        return []
    }
}

@Suite struct SendPlannerTests {
    @Test func seedTemplatePropertiesComeFirstAndCannotBeOverridden() throws {
        let item = NewsItem(
            id: "n1",
            headline: "Quake",
            url: "https://n/1",
            properties: ["team": "desk", "messageParam": "spoof", "Headline": "x"]
        )
        let sends = try SendPlanner.plan(item, category: "World")
        #expect(sends.count == 1)
        #expect(sends[0].tagExpression == "World")
        #expect(sends[0].properties.map(\.0) == ["messageParam", "headline", "category", "id", "url", "team"])
        #expect(sends[0].properties[0].1 == "Breaking World News : Quake")
    }

    @Test func secureItemsCarryOnlyTheirId() throws {
        let sends = try SendPlanner.plan(
            NewsItem(id: "s1", headline: "Embargoed detail", url: "https://n/s", secure: true),
            category: "Politics"
        )
        #expect(!sends[0].properties.contains { $0.1.contains("Embargoed") || $0.1.contains("https://") })
        #expect(sends[0].properties.contains { $0 == ("id", "s1") })
    }

    @Test func usersBecomeChunkedUsernameTagsAndBadExpressionsThrow() throws {
        let sends = try SendPlanner.plan(
            NewsItem(id: "u", headline: "h", users: (1...25).map { "u\($0)" }),
            category: "Sports"
        )
        #expect(sends.map(\.tagExpression.count).count == 2)
        #expect(sends[0].tagExpression.hasPrefix("username:u1 || username:u2"))
        #expect(throws: (any Error).self) {
            try SendPlanner.plan(NewsItem(id: "x", headline: "h", tagExpression: "a &&"), category: "World")
        }
    }
}
