import Foundation
import News
import NotificationHubs
import TestSupport
import Testing

@testable import HubEmulator

/// The emulator through HTTP, driven by the project's own client.
@Suite struct EmulatorFlowTests {
    static let template = SimulatedAudience.seedTemplate

    /// Registers one seed-000 device per tag set; returns registration ids in order.
    func register(_ tagSets: [[String]], with client: NotificationHubClient) async throws -> [String] {
        var ids: [String] = []
        for (i, tags) in tagSets.enumerated() {
            let id = try await client.createRegistrationID()
            try await client.upsertRegistration(
                Registration(platform: .apple, handle: "token\(i)", tags: tags, template: Self.template),
                id: id
            )
            ids.append(id)
        }
        return ids
    }

    @Test func seed000FlowReachesExactlyTheSubscribedDevices() async throws {
        let live = try await LiveEmulator(with(NotificationHubEmulator.Configuration()) { $0.samplePayloads = 50 })
        let listen = try live.client("DefaultListenSharedAccessSignature")
        // Devices hold only the listen key, and it is enough to register.
        let ids = try await register(
            [["World", "Sports"], ["Politics"], ["World"], ["Business", "Technology"]],
            with: listen
        )
        let backend = try live.client()
        let result = try await backend.sendTemplate(
            properties: [("messageParam", "Breaking World News : Quake hits")],
            tagExpression: "World"
        )
        #expect(result.status == 201 && result.notificationID == "1")

        let record = try #require(try await live.deliveries().first)
        #expect(record["matched"] as? Int == 2)
        #expect(Set(record["devices"] as? [String] ?? []) == ["registration:\(ids[0])", "registration:\(ids[2])"])
        #expect(
            record["payloads"] as? [String]
                == Array(repeating: #"{"aps":{"alert":"Breaking World News : Quake hits"}}"#, count: 2)
        )
    }

    @Test func perMessageTelemetrySaysWhatASendReached() async throws {
        let live = try await LiveEmulator()
        let client = try live.client()
        _ = try await register([["hubcast-canary"], ["hubcast-canary", "World"], ["World"]], with: client)
        let reached = try await client.sendTemplate(
            properties: [("messageParam", "canary")],
            tagExpression: "hubcast-canary"
        )
        let details = try await client.notificationDetails(id: try #require(reached.notificationID))
        #expect(details.state == "Completed" && details.successes == 2, "\(details)")
        #expect(details.isFinal)

        let nobody = try await client.sendTemplate(
            properties: [("messageParam", "canary")],
            tagExpression: "nobody-follows-this"
        )
        #expect(
            try await client.notificationDetails(id: try #require(nobody.notificationID))
                == NotificationDetails(
                    state: "NoTargetFound",
                    platforms: [("Template", [("Success", 0)])]
                )
        )
        // An id it never gave: 404, as the service answers before it has telemetry.
        await #expect { try await client.notificationDetails(id: "999999") } throws: {
            ($0 as? SendFailure)?.status == 404
        }
    }

    @Test func tagExpressionsSelectTheHandComputedAudience() async throws {
        let live = try await LiveEmulator(with(NotificationHubEmulator.Configuration()) { $0.samplePayloads = 50 })
        let client = try live.client()
        let tagSets = [
            ["World"], ["World", "Sports"], ["Politics"], ["Politics", "Sports"], ["Science"], ["World", "Politics"],
        ]
        let ids = try await register(tagSets, with: client)
        let cases: [(String, Set<Int>)] = [
            ("World || Politics", [0, 1, 2, 3, 5]),
            ("World && !Sports", [0, 5]),
            ("(World || Politics) && Sports", [1, 3]),
            ("!World && !Politics", [4]),
            ("Science || World && Politics", [4, 5]),
        ]
        for (expression, expected) in cases {
            #expect(
                live.emulator.handle(EmulatorRequest(method: "DELETE", path: "/_emulator/deliveries", host: "x")).status
                    == 204
            )
            _ = try await client.sendTemplate(properties: [("messageParam", "m")], tagExpression: expression)
            let record = try #require(try await live.deliveries().last)
            #expect(
                Set(record["devices"] as? [String] ?? []) == Set(expected.map { "registration:\(ids[$0])" }),
                "\(expression)"
            )
            #expect(record["matched"] as? Int == expected.count, "\(expression)")
        }
    }

    @Test func installationsWithPatch() async throws {
        let live = try await LiveEmulator(with(NotificationHubEmulator.Configuration()) { $0.samplePayloads = 10 })
        let client = try live.client()
        try await client.upsertInstallation(
            Installation(
                installationId: "phone-1",
                platform: "apns",
                pushChannel: "abc",
                tags: ["World"],
                templates: ["alert": .init(body: #"{"aps":{"alert":"$(messageParam)"}}"#)]
            )
        )
        _ = try await client.sendTemplate(properties: [("messageParam", "one")], tagExpression: "Sports")
        try await client.patchInstallation(id: "phone-1", [InstallationPatch(op: .add, path: "/tags", value: "Sports")])
        _ = try await client.sendTemplate(properties: [("messageParam", "two")], tagExpression: "Sports")
        try await client.patchInstallation(
            id: "phone-1",
            [
                InstallationPatch(op: .remove, path: "/tags/World"),
                InstallationPatch(
                    op: .replace,
                    path: "/templates/alert",
                    value: #"{"body":"{\"msg\":\"$(messageParam)\"}"}"#
                ),
            ]
        )
        _ = try await client.sendTemplate(properties: [("messageParam", "three")], tagExpression: "Sports || World")
        let fetched = try await client.installation(id: "phone-1")
        #expect(fetched.tags == ["Sports"])
        let records = try await live.deliveries()
        #expect(records.map { $0["matched"] as? Int } == [0, 1, 1])
        #expect(records[2]["payloads"] as? [String] == [#"{"msg":"three"}"#])
        try await client.deleteInstallation(id: "phone-1")
        _ = try await client.sendTemplate(properties: [("messageParam", "four")], tagExpression: "Sports")
        #expect(try await live.deliveries().last?["matched"] as? Int == 0)
    }

    /// A send to `$InstallationId:{…}` reaches that installation alone; `$UserId:{…}` every
    /// installation of that user.
    @Test func systemTagsReachTheirInstallations() async throws {
        let live = try await LiveEmulator(with(NotificationHubEmulator.Configuration()) { $0.samplePayloads = 10 })
        let client = try live.client()
        let template = ["alert": Installation.Template(body: #"{"aps":{"alert":"$(messageParam)"}}"#)]
        for (id, user) in [("inst-a1", "alice"), ("inst-a2", "alice"), ("inst-b1", "bob")] {
            try await client.upsertInstallation(
                Installation(
                    installationId: id,
                    platform: "apns",
                    pushChannel: "abc",
                    tags: ["World"],
                    templates: template,
                    userId: user
                )
            )
        }
        _ = try await client.sendTemplate(
            properties: [("messageParam", "one")],
            tagExpression: "$InstallationId:{inst-a1}"
        )
        _ = try await client.sendTemplate(properties: [("messageParam", "users")], tagExpression: "$UserId:{alice}")
        let records = try await live.deliveries()
        #expect(records.map { $0["matched"] as? Int } == [1, 2], "\(records)")
    }

    /// The registrations API as the REST reference has it: create with the hub's id, read all and
    /// by tag a page at a time, find a channel's registrations with `$filter`, ETags and `If-Match`.
    @Test func theRegistrationsAPIAsTheReferenceHasIt() async throws {
        let live = try await LiveEmulator()
        let atom = "application/atom+xml;type=entry;charset=utf-8"
        func entry(_ token: String, _ tags: String) -> String {
            #"<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml"><AppleRegistrationDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"><Tags>\#(tags)</Tags><DeviceToken>\#(token)</DeviceToken></AppleRegistrationDescription></content></entry>"#
        }
        var ids: [String] = []
        for n in 0..<5 {
            let token = String(repeating: n == 4 ? "AB" : "0\(n)", count: 32)
            let created = try await live.call(
                .post,
                "registrations?api-version=2020-06",
                headers: [HTTPHeader("Content-Type", atom)],
                body: entry(token, n.isMultiple(of: 2) ? "World" : "Sports")
            )
            #expect(created.status == 200, "\(String(decoding: created.body, as: UTF8.self))")
            let body = String(decoding: created.body, as: UTF8.self)
            let id = try #require(XMLText.text(of: "RegistrationId", in: body))
            #expect(
                created.header("etag") == #"W/"\#(n + 1)""# && body.contains(#"m:etag="W/&quot;\#(n + 1)&quot;""#),
                "\(created.headers)"
            )
            ids.append(id)
        }

        // Read all, two at a time: the continuation token walks every registration once.
        var seen: [String] = []
        var token: String?
        repeat {
            let query = "registrations/?$top=2&api-version=2020-06" + (token.map { "&ContinuationToken=" + $0 } ?? "")
            let page = try await live.call(.get, query)
            #expect(
                page.status == 200 && page.header("content-type")?.hasPrefix("application/atom+xml;type=feed") == true
            )
            let feed = String(decoding: page.body, as: UTF8.self)
            let entries = feed.components(separatedBy: "<RegistrationId>").dropFirst().map {
                String($0.prefix { $0 != "<" })
            }
            #expect(entries.count <= 2)
            seen += entries
            token = page.header("x-ms-continuationtoken")
        } while token != nil
        #expect(seen.sorted() == ids.sorted())
        let byTag = String(
            decoding: try await live.call(.get, "tags/World/registrations?api-version=2020-06").body,
            as: UTF8.self
        )
        #expect(byTag.components(separatedBy: "<RegistrationId>").count - 1 == 3)

        // A channel's registrations: the device token in upper case, as the reference says to send it.
        let filtered = try await live.call(
            .get,
            "registrations/?$filter=DeviceToken%20eq%20%27" + String(repeating: "AB", count: 32)
                + "%27&api-version=2020-06"
        )
        let found = String(decoding: filtered.body, as: UTF8.self)
        #expect(
            filtered.status == 200 && found.contains("<RegistrationId>\(ids[4])</RegistrationId>")
                && found.components(separatedBy: "<RegistrationId>").count == 2,
            "\(found)"
        )
        #expect(
            try await live.call(.get, "registrations/?$filter=Platform%20eq%20%27x%27&api-version=2020-06").status
                == 400
        )

        // If-Match: a stale ETag is refused (412), the current one and * are honoured.
        let stale = try await live.call(
            .put,
            "registrations/\(ids[0])?api-version=2020-06",
            headers: [HTTPHeader("If-Match", #"W/"99""#)],
            body: entry(String(repeating: "00", count: 32), "Science")
        )
        #expect(stale.status == 412)
        let updated = try await live.call(
            .put,
            "registrations/\(ids[0])?api-version=2020-06",
            headers: [HTTPHeader("If-Match", #"W/"1""#)],
            body: entry(String(repeating: "00", count: 32), "Science")
        )
        #expect(updated.status == 200 && updated.header("etag") == #"W/"6""#)
        #expect(
            try await live.call(
                .delete,
                "registrations/\(ids[0])?api-version=2020-06",
                headers: [HTTPHeader("If-Match", #"W/"1""#)]
            ).status == 412
        )
        #expect(
            try await live.call(
                .delete,
                "registrations/\(ids[0])?api-version=2020-06",
                headers: [HTTPHeader("If-Match", "*")]
            ).status == 200
        )
        #expect(
            try await live.call(
                .delete,
                "registrations/\(ids[0])?api-version=2020-06",
                headers: [HTTPHeader("If-Match", "*")]
            ).status == 404
        )
    }

    /// Browser installations carry their subscription object as `pushChannel` and get browser
    /// sends; a platform the emulator does not model is refused with a 400 naming it.
    @Test func browserInstallationsAndPlatformsNotModelled() async throws {
        let live = try await LiveEmulator()
        let browser =
            #"{"installationId":"web-1","platform":"browser","pushChannel":{"endpoint":"https://push.example/sub/1","p256dh":"BNcR","auth":"tBHI"},"tags":["World"]}"#
        let put = try await live.call(
            .put,
            "installations/web-1?api-version=2020-06",
            headers: [HTTPHeader("Content-Type", "application/json")],
            body: browser
        )
        #expect(put.status == 200, "\(String(decoding: put.body, as: UTF8.self))")
        let read = try await live.call(.get, "installations/web-1?api-version=2020-06")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(read.body)) as? [String: Any])
        #expect((json["pushChannel"] as? [String: String])?["p256dh"] == "BNcR")
        let send = try await live.call(
            .post,
            "messages/?api-version=2020-06",
            headers: [
                HTTPHeader("Content-Type", "application/json"), HTTPHeader("ServiceBusNotification-Format", "browser"),
                HTTPHeader("ServiceBusNotification-Tags", "World"),
            ],
            body: #"{"title":"x"}"#
        )
        #expect(send.status == 201)
        #expect(try await live.deliveries().last?["matched"] as? Int == 1)

        for (body, problem) in [
            (
                #"{"installationId":"k-1","platform":"adm","pushChannel":"x"}"#,
                #"The platform "adm" is one the emulator does not model"#
            ),
            (#"{"installationId":"k-1","platform":"pigeon","pushChannel":"x"}"#, #"Unknown platform "pigeon""#),
            (
                #"{"installationId":"k-1","platform":"browser","pushChannel":"x"}"#,
                "pushChannel is an object with endpoint, p256dh and auth"
            ),
            (
                #"{"installationId":"k-1","platform":"apns","pushChannel":{"endpoint":"e","p256dh":"k","auth":"a"}}"#,
                "only for the browser platform"
            ),
            (#"{"installationId":"k-1","pushChannel":"x"}"#, "platform is missing"),
        ] {
            let refused = try await live.call(
                .put,
                "installations/k-1?api-version=2020-06",
                headers: [HTTPHeader("Content-Type", "application/json")],
                body: body
            )
            let text = XMLText.text(of: "Detail", in: String(decoding: refused.body, as: UTF8.self)) ?? ""
            #expect(refused.status == 400 && text.contains(problem), "\(body): \(text)")
        }
    }

    /// Browser registrations (native and template), as the registrations API takes them: the
    /// endpoint with its P256DH and Auth keys; browser sends reach them, other formats do not.
    @Test func browserRegistrationsGetBrowserSends() async throws {
        let live = try await LiveEmulator()
        let native = Registration(
            platform: .browser,
            handle: "https://push.example/sub/7",
            tags: ["Science"],
            browserKeys: .init(p256dh: "BNcRdreALRFX", auth: "tBHItJI5")
        )
        let created = try await live.call(
            .post,
            "registrations/?api-version=2020-06",
            headers: [HTTPHeader("Content-Type", "application/atom+xml;type=entry;charset=utf-8")],
            body: native.atomEntry
        )
        let entry = String(decoding: created.body, as: UTF8.self)
        #expect(created.status == 200, "\(entry)")
        let read = try Registration(atomEntry: entry)
        #expect(read.platform == .browser && read.handle == native.handle && read.browserKeys == native.browserKeys)
        #expect(
            entry.contains("<BrowserRegistrationDescription")
                && entry.contains(
                    "<Endpoint>https://push.example/sub/7</Endpoint><P256DH>BNcRdreALRFX</P256DH><Auth>tBHItJI5</Auth>"
                )
        )

        var template = native
        template.handle = "https://push.example/sub/8"
        template.template = .init(body: #"{"title":"$(messageParam)"}"#)
        let put = try await live.call(
            .put,
            "registrations/browser-tmpl?api-version=2020-06",
            headers: [HTTPHeader("Content-Type", "application/atom+xml;type=entry;charset=utf-8")],
            body: template.atomEntry
        )
        #expect(
            put.status == 200
                && String(decoding: put.body, as: UTF8.self).contains("<BrowserTemplateRegistrationDescription")
        )

        let browserSend = try await live.call(
            .post,
            "messages/?api-version=2020-06",
            headers: [
                HTTPHeader("Content-Type", "application/json"), HTTPHeader("ServiceBusNotification-Format", "browser"),
                HTTPHeader("ServiceBusNotification-Tags", "Science"),
            ],
            body: #"{"title":"x"}"#
        )
        #expect(browserSend.status == 201)
        #expect(try await live.deliveries().last?["matched"] as? Int == 1, "the native browser registration only")
        let client = try live.client(attempts: 1)
        _ = try await client.sendTemplate(properties: [("messageParam", "Quake")], tagExpression: "Science")
        #expect(try await live.deliveries().last?["matched"] as? Int == 1, "the browser template registration only")

        var keyless = native
        keyless.browserKeys = nil
        let refused = try await live.call(
            .post,
            "registrations/?api-version=2020-06",
            headers: [HTTPHeader("Content-Type", "application/atom+xml;type=entry;charset=utf-8")],
            body: keyless.atomEntry
        )
        #expect(
            refused.status == 400
                && (XMLText.text(of: "Detail", in: String(decoding: refused.body, as: UTF8.self)) ?? "").contains(
                    "P256DH and Auth"
                )
        )
    }

    @Test func limitsBadTokensAndRightsAreRefusedAsNHDoes() async throws {
        let live = try await LiveEmulator()
        let client = try live.client(attempts: 1)
        // Past the limits the client refuses before sending; raw requests get NH's 400.
        let tooMany = (1...21).map { "t\($0)" }.joined(separator: "||")
        let mixed = "a && b && c && d && e && f && !g"
        for expression in [tooMany, mixed] {
            let answer = try await rawSend(live, tags: expression)
            #expect(answer.status == 400, "\(expression)")
        }
        let listenOnly = try live.client("DefaultListenSharedAccessSignature", attempts: 1)
        do {
            _ = try await listenOnly.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
            Issue.record("a listen key sent a notification")
        } catch {
            #expect(error.status == 401 && error.message.contains("lacks the Send right"))
        }
        // An expired token, signed with the right key.
        let key = try #require(live.emulator.configuration.policy.keys.first)
        let expired = SASToken(
            resourceURI: "http://127.0.0.1:\(live.port)/breaking",
            keyName: key.name,
            key: key.secret,
            expiry: 1000
        )
        let answer = try await rawSend(live, tags: "World", authorization: expired.header)
        #expect(answer.status == 401 && String(decoding: answer.body, as: UTF8.self).contains("ExpiredToken"))
        let forged = SASToken(
            resourceURI: "http://127.0.0.1:\(live.port)/breaking",
            keyName: key.name,
            key: "wrong",
            expiry: 4_000_000_000
        )
        #expect(try await rawSend(live, tags: "World", authorization: forged.header).status == 401)
        _ = client
    }

    @Test func everyFaultKindIsSeenByTheClient() async throws {
        let live = try await LiveEmulator()
        let client = try live.client(attempts: 3)
        func fault(_ f: Fault) {
            live.emulator.faults.clear()
            live.emulator.faults.add(f)
        }

        fault(Fault(status: 429, retryAfter: 0, count: 1))
        let throttled = try await client.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
        #expect(throttled.attempts == 2 && throttled.throttledAttempts == 1)

        fault(Fault(quotaExceeded: true, count: 1))
        let quota = try await client.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
        #expect(quota.attempts == 2 && quota.throttledAttempts == 1)

        fault(Fault(status: 503))
        do {
            _ = try await client.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
            Issue.record("503 fault did not fail")
        } catch {
            #expect(error.reason == .serverError && error.attempts == 3)
        }

        fault(Fault(latencyMs: 300))
        let slow = try await client.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
        #expect(slow.latency >= .milliseconds(300))

        // On a reused keep-alive connection libcurl silently re-sends a request whose connection died
        // unanswered, so the drop is shown on a fresh client's first (new) connection.
        fault(Fault(dropConnection: 1, count: 1))
        let dropped = try await live.client(attempts: 3).sendTemplate(
            properties: [("messageParam", "m")],
            tagExpression: "World"
        )
        #expect(dropped.attempts == 2)

        fault(Fault(status: 503, tag: "Sports"))
        #expect(
            try await client.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World").attempts == 1
        )

        // A hub that fails part-way through a job: two sends go through, then every one is refused.
        fault(Fault(status: 401, after: 2))
        let untouched = try await client.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
        #expect(untouched.attempts == 1)
        #expect(try await rawSend(live, tags: "World").status == 201)
        #expect(try await rawSend(live, tags: "World").status == 401)
        #expect(try await rawSend(live, tags: "World").status == 401)

        let (stats, _) = try await live.get("_emulator/stats")
        let counts = try #require(
            (try JSONSerialization.jsonObject(with: stats) as? [String: Any])?["statusCounts"] as? [String: Int]
        )
        #expect(counts["429"] == 1 && counts["403"] == 1 && counts["503"] == 3 && counts["401"] == 2)
    }

    private func rawSend(_ live: LiveEmulator, tags: String, authorization: String? = nil) async throws -> HTTPResponse
    {
        let key = try #require(live.emulator.configuration.policy.keys.first)
        let token =
            authorization
            ?? SASToken(
                resourceURI: "http://127.0.0.1:\(live.port)/breaking",
                keyName: key.name,
                key: key.secret,
                expiry: Int64(Date().timeIntervalSince1970) + 600
            ).header
        return try await CurlTransport(logger: .init(label: "t")).send(
            HTTPRequest(
                method: .post,
                url: live.baseURL + "breaking/messages/?api-version=2020-06",
                headers: [
                    HTTPHeader("Authorization", token), HTTPHeader("ServiceBusNotification-Format", "template"),
                    HTTPHeader("ServiceBusNotification-Tags", tags),
                    HTTPHeader("Content-Type", "application/json;charset=utf-8"),
                ],
                body: Array(#"{"messageParam":"m"}"#.utf8)
            )
        )
    }
}

func with<T>(_ value: T, _ change: (inout T) -> Void) -> T {
    var copy = value
    change(&copy)
    return copy
}

/// Native sends through the emulator: routed to that platform's registrations only, refused
/// where the hub refuses, flagged where only the platform would drop them.
@Suite struct EmulatorNativeSendTests {
    @Test func aNativeSendReachesOnlyItsPlatformAndIsCheckedByThePlatformsRules() async throws {
        let live = try await LiveEmulator()
        let client = try live.client()
        for (platform, handle) in [(Registration.Platform.apple, "aa01"), (.fcmv1, "f-1"), (.windows, "https://w/1")] {
            let id = try await client.createRegistrationID()
            try await client.upsertRegistration(
                Registration(platform: platform, handle: handle, tags: ["World"]),
                id: id
            )
        }
        let templateID = try await client.createRegistrationID()
        try await client.upsertRegistration(
            Registration(platform: .apple, handle: "aa02", tags: ["World"], template: SimulatedAudience.seedTemplate),
            id: templateID
        )

        let apple = NativeNotification(
            platform: .apple,
            payload: Array(#"{"aps":{"alert":"Quake"}}"#.utf8),
            headers: [HTTPHeader("apns-push-type", "alert"), HTTPHeader("apns-priority", "10")]
        )
        let sent = try await client.send(.native(apple), tagExpression: "World")
        var records = try await live.deliveries()
        #expect(records.last?["matched"] as? Int == 1 && records.last?["format"] as? String == "apple")
        #expect(records.last?["problem"] == nil)
        let details = try await client.notificationDetails(id: try #require(sent.notificationID))
        #expect(details.platforms.map(\.platform) == ["Apns"] && details.successes == 1, "\(details)")

        // Over APNs' 4 KB: the hub takes it, APNs would refuse it: flagged, counted as the platform's refusal.
        let big = NativeNotification(
            platform: .apple,
            payload: Array(#"{"aps":{"alert":"\#(String(repeating: "x", count: 4200))"}}"#.utf8),
            headers: [HTTPHeader("apns-push-type", "alert")]
        )
        let flagged = try await client.send(.native(big), tagExpression: "World")
        records = try await live.deliveries()
        #expect((records.last?["problem"] as? String ?? "").hasPrefix("apple payload breaks rule size:"))
        let flaggedDetails = try await client.notificationDetails(id: try #require(flagged.notificationID))
        #expect(flaggedDetails.outcomes.map(\.name) == ["PnsInvalidNotificationSize"], "\(flaggedDetails)")

        // What the hub itself checks is refused with 400, naming the rule.
        let refusals: [NativeNotification] = [
            NativeNotification(platform: .fcmv1, payload: Array("{not json".utf8)),
            NativeNotification(
                platform: .windows,
                payload: Array("<toast>".utf8),
                headers: [HTTPHeader("X-WNS-Type", "wns/toast")]
            ),
            NativeNotification(
                platform: .windows,
                payload: Array("<toast/>".utf8),
                headers: [HTTPHeader("X-WNS-Type", "wns/tile")]
            ),
        ]
        for notification in refusals {
            await #expect {
                try await client.send(.native(notification), tagExpression: "World")
            } throws: { error in
                (error as? SendFailure)?.status == 400
                    && (error as? SendFailure)?.message.contains("payload breaks rule") == true
            }
        }
        let stats = try JSONSerialization.jsonObject(with: try await live.get("/_emulator/stats").0) as? [String: Any]
        #expect(stats?["flagged"] as? Int == 1 && stats?["sends"] as? Int == 2, "\(String(describing: stats))")
    }
}

/// Scheduled notifications in the emulator: kept, delivered at their time, cancelled.
@Suite struct EmulatorScheduledSendTests {
    @Test func aScheduledSendIsDeliveredAtItsTimeAndOneCancelledNever() async throws {
        let live = try await LiveEmulator()
        let client = try live.client()
        let id = try await client.createRegistrationID()
        try await client.upsertRegistration(
            Registration(platform: .apple, handle: "aa01", tags: ["World"], template: SimulatedAudience.seedTemplate),
            id: id
        )
        // 5 s ahead; a request that reached the emulator after its time (7 s late once, with every
        // suite starting at once on 2 cores) is refused as in the past, or goes now if the client
        // saw its time come first: then it is asked again, a few times at most. The test is about
        // when the emulator delivers what it accepted, not about how loaded the machine is.
        var scheduledID: String?
        var due = 0.0
        var attempt = 0
        while scheduledID == nil && attempt < 5 {
            attempt += 1
            due = Date().timeIntervalSince1970 + 5
            do {
                scheduledID = try await client.send(
                    .template([("messageParam", "later")]),
                    tagExpression: "World",
                    scheduledAt: due
                ).scheduledID
            } catch {
                guard error.status == 400, error.message.contains("in the past") else { throw error }
            }
        }
        let scheduled = try #require(scheduledID, "5 requests each reached the emulator after their time")
        #expect(scheduled.contains("-") && scheduled.contains("_"))
        let delivered = try await poll(every: .milliseconds(20), timeout: .seconds(30)) {
            try await live.deliveries().first { $0["scheduledId"] as? String == scheduled }
        }
        let at = try #require(delivered?["at"] as? Double)
        // Delivered when due (the emulator's timer), not before, to the device it reaches then: due
        // as the header says it, in whole milliseconds. How soon after is measured with the
        // emulator in a process of its own (ScheduledSendTests).
        #expect(at >= due - 0.001, "due \(due), delivered \(at)")
        #expect(delivered?["matched"] as? Int == 1)

        // Two hours ahead: kept, listed, cancelled once; a second cancel finds nothing.
        let later = try await client.send(
            .template([("messageParam", "much later")]),
            tagExpression: "World",
            scheduledAt: Date().timeIntervalSince1970 + 7_200
        )
        let laterID = try #require(later.scheduledID)
        let (listed, _) = try await live.get("_emulator/scheduled")
        #expect(String(decoding: listed, as: UTF8.self).contains(laterID))
        try await client.cancelScheduled(id: laterID)
        await #expect {
            try await client.cancelScheduled(id: laterID)
        } throws: { ($0 as? SendFailure)?.status == 404 }
        let stats = try JSONSerialization.jsonObject(with: try await live.get("/_emulator/stats").0) as? [String: Any]
        #expect(stats?["scheduledPending"] as? Int == 0 && stats?["scheduledCancelled"] as? Int == 1)

        // A time in the past (sent as it is: the client itself would send it now), more than 7 days
        // ahead, or not a time, is refused.
        for time in [
            NotificationHubClient.scheduleTime(Date().timeIntervalSince1970 - 5),
            NotificationHubClient.scheduleTime(Date().timeIntervalSince1970 + 8 * 86_400), "tomorrow",
        ] {
            let answer = try await live.call(
                .post,
                "schedulednotifications/?api-version=2020-06",
                headers: [
                    HTTPHeader("ServiceBusNotification-Format", "template"),
                    HTTPHeader("Content-Type", "application/json"),
                    HTTPHeader("ServiceBusNotification-ScheduleTime", time),
                ],
                body: #"{"messageParam":"x"}"#
            )
            #expect(answer.status == 400, "\(time): \(answer.status)")
        }
        // The .NET SDK's form, whole seconds and no zone, is UTC.
        let dotNet = try await live.call(
            .post,
            "schedulednotifications/?api-version=2020-06",
            headers: [
                HTTPHeader("ServiceBusNotification-Format", "template"),
                HTTPHeader("Content-Type", "application/json"),
                HTTPHeader(
                    "ServiceBusNotification-ScheduleTime",
                    String(NotificationHubClient.scheduleTime(Date().timeIntervalSince1970 + 3_600).prefix(19))
                ),
            ],
            body: #"{"messageParam":"x"}"#
        )
        #expect(dotNet.status == 201, "\(dotNet.status)")
    }
}
