import Foundation
import News
import NotificationHubs
import TestSupport
import Testing

/// Native sends on the real binary: `hubcast run` against the dev broker and the emulator, with
/// one device of each platform registered natively beside the simulated template devices.
@Suite(.serialized) struct NativeSendTests {
    /// A native registration per platform on World, and an apple one on Sports alone.
    static func registerNativeDevices(_ h: PipelineHarness) async throws {
        let client = try h.hubClient()
        let devices: [(Registration.Platform, String, [String])] = [
            (.apple, "a0a0a0a0", ["World"]), (.fcmv1, "fcm-token-1", ["World"]),
            (.windows, "https://wns.example/channel/1", ["World"]), (.apple, "b1b1b1b1", ["Sports"]),
        ]
        for (platform, handle, tags) in devices {
            let id = try await client.createRegistrationID()
            try await client.upsertRegistration(Registration(platform: platform, handle: handle, tags: tags), id: id)
        }
    }

    func records(_ all: [[String: Any]], containing id: String) -> [[String: Any]] {
        all.filter { (($0["payloads"] as? [String])?.first ?? "").contains(id) }
    }

    @Test func eachPlatformReachesItsOwnDevicesWithTheDocumentedRequest() async throws {
        let h = try await PipelineHarness(devices: 20, partitions: 1)
        try await Self.registerNativeDevices(h)
        let world = "news.world"
        let items: [(topic: String, value: String)] = [
            (
                world,
                #"{"id":"all-1","headline":"Quake & \"aftershock\"","platforms":["template","apple","fcmv1","windows"],"priority":"breaking"}"#
            ),
            (
                world,
                #"{"id":"explicit-2","headline":"h","notifications":{"apple":{"aps":{"alert":"explicit-2 alert","badge":1}},"fcmv1":{"message":{"data":{"story":"explicit-2"}}}}}"#
            ),
            (world, #"{"id":"legacy-3","headline":"h","notifications":{"fcmv1":{"data":{"story":"legacy-3"}}}}"#),
            (world, #"{"id":"gcm-4","headline":"h","platforms":["gcm"]}"#),
        ]
        try await h.produce(0..<0, extra: items)
        let startedAt = Date().timeIntervalSince1970
        let run = try await h.run()
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")
        let all = try await h.deliveryRecords()

        // The rendered item: one send per platform, each to that platform's devices only.
        let followers = try h.followers()
        // Native payloads carry the id; the template devices' payload is their template filled in.
        let rendered = records(all, containing: "all-1") + records(all, containing: "News : Quake")
        #expect(rendered.map { $0["format"] as? String ?? "" }.sorted() == ["apple", "fcmv1", "template", "windows"])
        for record in rendered {
            let format = record["format"] as? String ?? ""
            #expect(record["tagExpression"] as? String == "World")
            #expect(record["matched"] as? Int == (format == "template" ? followers["World"] : 1), "\(record)")
            #expect(record["problem"] == nil, "\(record)")
            let headers = record["headers"] as? [String: String] ?? [:]
            let body = (record["payloads"] as? [String])?.first ?? ""
            switch format {
            case "apple":
                #expect(
                    body
                        == #"{"aps":{"alert":{"title":"Breaking World News","body":"Quake & \"aftershock\""},"sound":"default"},"id":"all-1","category":"World"}"#
                )
                #expect(headers["content-type"] == "application/json;charset=utf-8")
                #expect(headers["apns-push-type"] == "alert" && headers["apns-priority"] == "10")
                // No expiresAt: the maximum age (20 minutes from the Kafka timestamp) bounds it.
                let expiration = Double(headers["apns-expiration"] ?? "") ?? 0
                #expect(expiration > startedAt + 1100 && expiration < Date().timeIntervalSince1970 + 1200, "\(headers)")
            case "fcmv1":
                #expect(
                    body.hasPrefix(
                        #"{"message":{"notification":{"title":"Breaking World News","body":"Quake & \"aftershock\""},"data":{"id":"all-1","category":"World"},"android":{"priority":"HIGH","ttl":""#
                    )
                )
                #expect(headers == ["content-type": "application/json;charset=utf-8"])
            case "windows":
                #expect(
                    body
                        == #"<toast launch="id=all-1"><visual><binding template="ToastGeneric"><text>Breaking World News</text><text>Quake &amp; &quot;aftershock&quot;</text></binding></visual></toast>"#
                )
                #expect(headers == ["content-type": "application/xml", "x-wns-type": "wns/toast"])
            default:
                #expect(body.contains("Breaking World News : Quake"), "\(body)")
                #expect(record["headers"] == nil)
            }
        }

        // Explicit apple and fcmv1 payloads: exactly one send of each, as written, and no template send.
        let explicit = records(all, containing: "explicit-2")
        #expect(explicit.map { $0["format"] as? String ?? "" }.sorted() == ["apple", "fcmv1"])
        #expect(explicit.allSatisfy { $0["matched"] as? Int == 1 })
        #expect(
            Set(explicit.compactMap { ($0["payloads"] as? [String])?.first }) == [
                #"{"aps":{"alert":"explicit-2 alert","badge":1}}"#, #"{"message":{"data":{"story":"explicit-2"}}}"#,
            ]
        )
        // The Sports device heard nothing of World.
        #expect(all.allSatisfy { $0["tagExpression"] as? String == "World" })

        // The item in the retired GCM shape and the unknown platform: never sent, dead-lettered as
        // invalid with the platform and the rule (or the field) named.
        #expect(records(all, containing: "legacy-3").isEmpty)
        let dead = try h.deadLetters()
        let byID = Dictionary(dead.map { ($0["itemId"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(dead.count == 2 && dead.allSatisfy { $0["reason"] as? String == "invalid" }, "\(dead)")
        #expect((byID["legacy-3"]?["error"] as? String ?? "").hasPrefix("fcmv1 payload breaks rule legacy-gcm:"))
        #expect((byID["gcm-4"]?["error"] as? String ?? "").contains("\"platforms[0]\""), "\(dead)")

        // The metrics count sends by platform.
        let last = try PipelineHarness.metricsLines(run.stdout).last ?? [:]
        #expect(
            last["sentByPlatform"] as? [String: Int] == ["template": 1, "apple": 2, "fcmv1": 2, "windows": 1],
            "\(last)"
        )
        try await PipelineHarness.validateMetrics(run.stdout)
    }

    @Test func aFailedNativeSendIsDeadLetteredWithItsPlatformAndReplayedAsThatSendAlone() async throws {
        let h = try await PipelineHarness(devices: 10, partitions: 1)
        try await Self.registerNativeDevices(h)
        // The hub refuses what goes to Sports: the apple send fails for good (400), the template one too.
        try await h.faults(#"{"status":400,"tag":"Sports"}"#)
        try await h.produce(
            0..<0,
            extra: [("news.sports", #"{"id":"s-1","headline":"Final score","platforms":["template","apple"]}"#)]
        )
        let run = try await h.run()
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")
        let dead = try h.deadLetters()
        #expect(dead.map { $0["platform"] as? String ?? "-" }.sorted() == ["apple", "template"], "\(dead)")
        #expect(dead.allSatisfy { $0["reason"] as? String == "bad-request" && $0["audience"] as? String == "Sports" })

        // Only the apple record replayed: one apple send reaches the Sports device, no template send.
        try await h.clearFaults()
        let apple = dead.filter { $0["platform"] as? String == "apple" }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hubcast-apple-\(UUID().uuidString).jsonl"
        )
        defer { try? FileManager.default.removeItem(at: file) }
        try JSONSerialization.data(withJSONObject: apple[0]).write(to: file)
        let replay = try await h.replay(["--from", "file:" + file.path])
        #expect(replay.status == 0, "\(replay.stderr.suffix(2000))")
        let sent = try await h.deliveryRecords()
        #expect(sent.count == 1, "\(sent)")
        #expect(sent.first?["format"] as? String == "apple" && sent.first?["matched"] as? Int == 1)
        let headers = sent.first?["headers"] as? [String: String] ?? [:]
        #expect(headers["apns-push-type"] == "alert" && headers["apns-priority"] == "10", "\(headers)")
    }
}
