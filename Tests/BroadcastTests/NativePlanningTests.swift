import Broadcast
import News
import NotificationHubs
import Testing
import TextFormats

/// Native sends planned from news items: one per platform, the documented renderings, the
/// platform headers, and the lint refusing the whole item with the platform and rule named.
@Suite struct NativePlanningTests {
    func native(_ send: PlannedSend) throws -> NativeNotification {
        guard case .native(let n) = send.notification else {
            Issue.record("\(send.platform) is not a native send")
            throw LintViolation(.apple, .json, "not native")
        }
        return n
    }

    func text(_ n: NativeNotification) -> String { String(decoding: n.payload, as: UTF8.self) }

    func headers(_ n: NativeNotification) -> [String] { n.headers.map { "\($0.name): \($0.value)" } }

    @Test func anItemWithoutPlatformsIsOneTemplateSend() throws {
        let sends = try SendPlanner.plan(NewsItem(id: "t", headline: "Quake"), category: "World")
        #expect(sends.map(\.platform) == ["template"])
    }

    @Test func eachListedPlatformIsOneSendPerAudience() throws {
        let item = NewsItem(
            id: "p",
            headline: "Quake",
            users: (1...25).map { "u\($0)" },
            platforms: [.template, .apple, .fcmv1, .windows]
        )
        let sends = try SendPlanner.plan(item, category: "World")
        // 25 users are two audience expressions: 4 platforms × 2.
        #expect(
            sends.map(\.platform) == ["template", "template", "apple", "apple", "fcmv1", "fcmv1", "windows", "windows"]
        )
        #expect(Set(sends.map(\.tagExpression)).count == 2)
    }

    @Test func renderedPayloadsAndHeadersAreTheDocumentedOnes() throws {
        let item = NewsItem(
            id: "r-1",
            headline: "Quake <coast> & \"inland\"",
            url: "https://n/1",
            imageUrl: "https://n/1.jpg",
            properties: ["desk": "asia", "from": "spoof", "googleX": "spoof"],
            platforms: [.apple, .fcmv1, .windows]
        )
        let sends = try SendPlanner.plan(
            item,
            category: "World",
            priority: .breaking,
            expiresAt: 1_800_000_100.7,
            now: 1_800_000_000
        )
        let apple = try native(sends[0])
        #expect(
            text(apple)
                == #"{"aps":{"alert":{"title":"Breaking World News","body":"Quake <coast> & \"inland\""},"sound":"default"},"id":"r-1","category":"World","url":"https://n/1","desk":"asia","from":"spoof","googleX":"spoof"}"#
        )
        #expect(headers(apple) == ["apns-push-type: alert", "apns-priority: 10", "apns-expiration: 1800000100"])
        #expect(apple.contentType == "application/json;charset=utf-8")
        let fcm = try native(sends[1])
        // FCM refuses its own data keys ("from", google…): they are left out.
        #expect(
            text(fcm)
                == #"{"message":{"notification":{"title":"Breaking World News","body":"Quake <coast> & \"inland\"","image":"https://n/1.jpg"},"data":{"id":"r-1","category":"World","url":"https://n/1","desk":"asia"},"android":{"priority":"HIGH","ttl":"100s"}}}"#
        )
        #expect(fcm.headers.isEmpty)
        let wns = try native(sends[2])
        #expect(
            text(wns)
                == #"<toast launch="id=r-1"><visual><binding template="ToastGeneric"><text>Breaking World News</text><text>Quake &lt;coast&gt; &amp; &quot;inland&quot;</text></binding></visual></toast>"#
        )
        #expect(headers(wns) == ["X-WNS-Type: wns/toast"])
        #expect(wns.contentType == "application/xml")
        for send in sends { #expect(try native(send).violation == nil) }
    }

    @Test func bulkGoesAtAPowerConsideratePriorityAndNoBoundMeansNoExpiry() throws {
        let sends = try SendPlanner.plan(
            NewsItem(id: "b", headline: "Scores", platforms: [.apple, .fcmv1]),
            category: "Sports",
            priority: .bulk
        )
        #expect(headers(try native(sends[0])) == ["apns-push-type: alert", "apns-priority: 5"])
        #expect(text(try native(sends[1])).contains(#""android":{"priority":"NORMAL"}"#))
    }

    @Test func aSecureItemCarriesItsTitleAndIdOnly() throws {
        let item = NewsItem(
            id: "s-1",
            headline: "Embargoed detail",
            url: "https://n/s",
            properties: ["desk": "x"],
            secure: true,
            platforms: [.apple, .fcmv1, .windows]
        )
        for send in try SendPlanner.plan(item, category: "Politics") {
            let body = text(try native(send))
            #expect(!body.contains("Embargoed") && !body.contains("https://") && !body.contains("desk"), "\(body)")
            #expect(body.contains("s-1") && body.contains("Breaking Politics News"))
        }
    }

    @Test func explicitPayloadsAreSentAsGivenAndImplyOnlyTheirPlatforms() throws {
        let apple = try JSONParser.parse(Array(#"{"aps":{"alert":"Quake","badge":1},"story":7}"#.utf8))
        let fcm = try JSONParser.parse(Array(#"{"message":{"data":{"story":"7"}}}"#.utf8))
        let item = NewsItem(id: "e", headline: "Quake", notifications: [.apple: .json(apple), .fcmv1: .json(fcm)])
        let sends = try SendPlanner.plan(item, category: "World")
        #expect(sends.map(\.platform) == ["apple", "fcmv1"])
        #expect(text(try native(sends[0])) == #"{"aps":{"alert":"Quake","badge":1},"story":7}"#)
        #expect(text(try native(sends[1])) == #"{"message":{"data":{"story":"7"}}}"#)
        // With platforms listed, the explicit ones come after them, each once.
        var listed = item
        listed.platforms = [.template, .fcmv1]
        #expect(try SendPlanner.plan(listed, category: "World").map(\.platform) == ["template", "fcmv1", "apple"])
    }

    @Test func aSilentApplePayloadIsABackgroundPushAtPriorityFive() throws {
        let silent = try JSONParser.parse(Array(#"{"aps":{"content-available":1},"story":"7"}"#.utf8))
        let sends = try SendPlanner.plan(
            NewsItem(id: "bg", headline: "h", notifications: [.apple: .json(silent)]),
            category: "World",
            priority: .breaking
        )
        #expect(headers(try native(sends[0])) == ["apns-push-type: background", "apns-priority: 5"])
    }

    @Test func anExplicitTileIsSentAsATile() throws {
        let tile = #"<tile><visual><binding template="TileMedium"><text>Quake</text></binding></visual></tile>"#
        let sends = try SendPlanner.plan(
            NewsItem(id: "w", headline: "h", notifications: [.windows: .xml(tile)]),
            category: "World"
        )
        #expect(headers(try native(sends[0])) == ["X-WNS-Type: wns/tile"])
    }

    @Test func aPayloadThatBreaksARuleRefusesTheWholeItemNamingPlatformAndRule() throws {
        let legacy = try JSONParser.parse(Array(#"{"data":{"story":"7"}}"#.utf8))
        let item = NewsItem(
            id: "bad",
            headline: "h",
            platforms: [.template, .apple],
            notifications: [.fcmv1: .json(legacy)]
        )
        #expect {
            try SendPlanner.plan(item, category: "World")
        } throws: { error in
            guard case .payload(let violation) = error as? SendPlanner.Refusal else { return false }
            return violation.platform == .fcmv1 && violation.rule == .legacyGCM
                && "\(error)".hasPrefix("fcmv1 payload breaks rule legacy-gcm:")
        }
        // A headline rendering over APNs' 4 KB: refused by size, not sent to be dropped.
        let long = NewsItem(
            id: "l",
            headline: String(repeating: "é", count: 400),
            properties: ["p": String(repeating: "x", count: 4000)],
            platforms: [.apple]
        )
        #expect {
            try SendPlanner.plan(long, category: "World")
        } throws: { error in
            guard case .payload(let violation) = error as? SendPlanner.Refusal else { return false }
            return violation.platform == .apple && violation.rule == .size
        }
    }

    @Test func aReplayOfOneFailedSendPlansThatSendOnly() throws {
        let item = NewsItem(id: "r", headline: "h", platforms: [.template, .apple, .windows])
        let sends = try SendPlanner.plan(item, category: "World", audience: "World && !Sports", platform: "apple")
        #expect(sends.map(\.platform) == ["apple"])
        #expect(sends.map(\.tagExpression) == ["World && !Sports"])
    }

    // MARK: Scheduling

    func item(sendAt: Double, platforms: [NewsItem.Platform]? = nil) -> NewsItem {
        NewsItem(
            id: "s",
            headline: "h",
            sendAt: Timestamp(rfc3339: CivilDate.rfc3339(epochSeconds: sendAt, milliseconds: true)),
            platforms: platforms
        )
    }

    @Test func aSendAtAheadIsScheduledAndOneTooCloseOrPastGoesNow() throws {
        let now = 1_800_000_000.0
        let ahead = try SendPlanner.plan(item(sendAt: now + 2), category: "World", now: now)
        #expect(ahead.map(\.scheduledAt) == [now + 2])
        #expect(try SendPlanner.plan(item(sendAt: now + 0.5), category: "World", now: now).map(\.scheduledAt) == [nil])
        #expect(try SendPlanner.plan(item(sendAt: now - 60), category: "World", now: now).map(\.scheduledAt) == [nil])
        // Exactly 7 days ahead is the hub's limit, and kept.
        #expect(
            try SendPlanner.plan(item(sendAt: now + 7 * 86_400), category: "World", now: now).map(\.scheduledAt)
                == [now + 7 * 86_400]
        )
    }

    @Test func moreThanSevenDaysAheadRefusesTheItemNamingSendAt() {
        let now = 1_800_000_000.0
        #expect {
            try SendPlanner.plan(item(sendAt: now + 8 * 86_400), category: "World", now: now)
        } throws: { error in
            guard case .schedule = error as? SendPlanner.Refusal else { return false }
            return "\(error)" == #"field "sendAt" is 8.0 days ahead: the hub keeps a scheduled notification at most 7"#
        }
    }

    @Test func aScheduledNativeNotificationLivesFromItsTimeNotFromNow() throws {
        let now = 1_800_000_000.0
        let sends = try SendPlanner.plan(
            item(sendAt: now + 3_600, platforms: [.fcmv1, .apple]),
            category: "World",
            expiresAt: now + 3_600 + 600,
            now: now
        )
        #expect(text(try native(sends[0])).contains(#""ttl":"600s""#))
        #expect(headers(try native(sends[1])).contains("apns-expiration: \(Int(now) + 4_200)"))
        #expect(sends.allSatisfy { $0.scheduledAt == now + 3_600 })
    }
}
