import Foundation
import NotificationHubs
import TestSupport
import Testing
import TextFormats

/// `hubcast send` through the real binary.
@Suite struct SendCommandTests {
    static let key = "c2VjcmV0LWtleS1kby1ub3QtcHJpbnQ="

    static func environment(port: Int, emulator: Bool = true, host: String = "127.0.0.1") -> [String: String] {
        [
            "HUBCAST_CONNECTION_STRING":
                "Endpoint=sb://\(host):\(port)/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=\(key)"
                + (emulator ? ";UseDevelopmentEmulator=true" : ""),
            "HUBCAST_HUB": "breaking",
        ]
    }

    @Test func sendsTheSeedRequestAndPrintsTheOutcome() async throws {
        let server = try ScriptedHTTPServer { _, _ in
            .init(
                status: 201,
                headers: [("Location", "http://h/breaking/messages/42?api-version=2020-06"), ("TrackingId", "t-1")]
            )
        }
        let result = try await HubcastBinary.run(
            ["send", "--category", "Science", "--headline", "Comet seen", "--id", "c1"],
            environment: Self.environment(port: server.port)
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout == "sent template to Science: HTTP 201, notification id 42, attempts 1, tracking id t-1\n"
        )
        let body = String(decoding: try #require(server.requests.first).body, as: UTF8.self)
        #expect(
            body
                == #"{"messageParam":"Breaking Science News : Comet seen","headline":"Comet seen","category":"Science","id":"c1"}"#
        )
    }

    /// `--platform` makes one native send per platform, each with its format's headers and the
    /// documented rendering; a retired or unknown platform is refused before any request.
    @Test func platformsAreOneNativeSendEachWithTheirHeaders() async throws {
        let server = try ScriptedHTTPServer { _, _ in .init(status: 201) }
        let result = try await HubcastBinary.run(
            [
                "send", "--category", "World", "--headline", "Quake", "--id", "q1", "--platform", "apple",
                "--platform", "windows",
            ],
            environment: Self.environment(port: server.port)
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.hasPrefix("sent apple to World: HTTP 201")
                && result.stdout.contains("\nsent windows to World:")
        )
        let requests = server.requests
        #expect(requests.map { $0.header("ServiceBusNotification-Format") ?? "-" } == ["apple", "windows"])
        #expect(requests[0].header("Content-Type") == "application/json;charset=utf-8")
        #expect(requests[0].header("apns-push-type") == "alert" && requests[0].header("apns-priority") == "10")
        #expect(
            String(decoding: requests[0].body, as: UTF8.self)
                == #"{"aps":{"alert":{"title":"Breaking World News","body":"Quake"},"sound":"default"},"id":"q1","category":"World"}"#
        )
        #expect(
            requests[1].header("Content-Type") == "application/xml" && requests[1].header("X-WNS-Type") == "wns/toast"
        )
        #expect(requests.allSatisfy { $0.header("ServiceBusNotification-Tags") == "World" })

        let retired = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "Quake", "--platform", "gcm"],
            environment: Self.environment(port: server.port)
        )
        #expect(
            retired.status == 2 && retired.stderr.contains("\"--platform\" is the legacy FCM API"),
            "\(retired.stderr)"
        )
        let legacy = try await HubcastBinary.run(
            [
                "send", "--category", "World", "--json",
                #"{"id":"l","headline":"h","notifications":{"fcmv1":{"notification":{"title":"t"}}}}"#,
            ],
            environment: Self.environment(port: server.port)
        )
        #expect(
            legacy.status == 2 && legacy.stderr.contains("fcmv1 payload breaks rule legacy-gcm"),
            "\(legacy.stderr)"
        )
        #expect(server.requests.count == 2)
    }

    /// `--send-at` schedules the send at the hub and prints the id that cancels it; more than
    /// 7 days ahead is refused before any request.
    @Test func sendAtSchedulesAndPrintsTheScheduledID() async throws {
        let server = try ScriptedHTTPServer { _, _ in
            .init(
                status: 201,
                headers: [("Location", "http://h/breaking/schedulednotifications/9-123_4?api-version=2020-06")]
            )
        }
        let result = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "Polls close", "--send-at", "2099-01-01T07:00:00Z"],
            environment: Self.environment(port: server.port)
        )
        #expect(result.status == 2 && result.stderr.contains(#"field "sendAt" is"#), "\(result.stderr)")
        let soon = CivilDate.rfc3339(epochSeconds: Date().timeIntervalSince1970 + 3_600)
        let scheduled = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "Polls close", "--send-at", soon],
            environment: Self.environment(port: server.port)
        )
        #expect(scheduled.status == 0, "\(scheduled.stderr)")
        #expect(
            scheduled.stdout.hasPrefix(
                "scheduled template to World for \(soon.dropLast()).000Z: HTTP 201, scheduled id 9-123_4"
            ),
            "\(scheduled.stdout)"
        )
        let request = try #require(server.requests.first)
        #expect(request.requestLine.hasPrefix("POST /breaking/schedulednotifications/?api-version="))
        #expect(request.header("ServiceBusNotification-ScheduleTime") == "\(soon.dropLast()).000Z")
        #expect(server.requests.count == 1)
    }

    /// The hub's system tags name one installation (or one user's): `send` takes them; other `$`
    /// tags are reserved and refused before any request.
    @Test func systemTagsAreAnAudience() async throws {
        let server = try ScriptedHTTPServer { _, _ in .init(status: 201) }
        let one = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "x", "--tag-expression", "$InstallationId:{inst-a1}"],
            environment: Self.environment(port: server.port)
        )
        #expect(one.status == 0, "\(one.stdout) \(one.stderr)")
        #expect(server.requests.first?.header("ServiceBusNotification-Tags") == "$InstallationId:{inst-a1}")
        let reserved = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "x", "--tag-expression", "$Other:{x}"],
            environment: Self.environment(port: server.port)
        )
        #expect(reserved.status == 2 && reserved.stderr.contains("other $ tags are reserved"), "\(reserved.stderr)")
        #expect(server.requests.count == 1)
    }

    @Test func failedSendExits1AndUnreachableHubExits3() async throws {
        let server = try ScriptedHTTPServer { _, _ in
            .init(status: 404, body: "<Error><Code>404</Code><Detail>Hub not found</Detail></Error>")
        }
        let failed = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "x"],
            environment: Self.environment(port: server.port)
        )
        #expect(failed.status == 1)
        #expect(failed.stdout.contains("failed template to World: not-found (HTTP 404, 1 attempt): Hub not found"))

        let port = freeLoopbackPort()
        let unreachable = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "x", "--max-attempts", "2", "--retry-base-ms", "1"],
            environment: Self.environment(port: port)
        )
        #expect(unreachable.status == 3)
        #expect(unreachable.stderr.contains("could not reach the hub at http://127.0.0.1:\(port)/"))
    }

    @Test func selfSignedTLSFailsByDefaultAndWorksWithCAFile() async throws {
        let nginx = try await NginxProcess(tls: true)
        defer { nginx.stop() }
        let env = Self.environment(port: nginx.port, emulator: false)
        let refused = try await HubcastBinary.run(["send", "--category", "World", "--headline", "x"], environment: env)
        #expect(refused.status == 3)
        #expect(refused.stdout.contains("failed template to World: tls"))
        let trusted = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "x", "--ca-file", try #require(nginx.certificate)],
            environment: env
        )
        #expect(trusted.status == 0, "\(trusted.stdout)\(trusted.stderr)")
        #expect(trusted.stdout.hasPrefix("sent template to World: HTTP 201"))
    }

    @Test func badInputAndConfigurationExit2WithoutTheKey() async throws {
        let env = Self.environment(port: 1)
        let badExpression = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "x", "--tag-expression", "World &&"],
            environment: env
        )
        #expect(badExpression.status == 2)
        #expect(badExpression.stderr.contains("tag expression: a tag or '(' is missing at column 9"))

        var broken = env
        broken["HUBCAST_CONNECTION_STRING"] = "Endpoint=sb://x/;SharedAccessKey=\(Self.key)"
        let badString = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "x"],
            environment: broken
        )
        #expect(badString.status == 2)
        #expect(badString.stderr.contains("connection string has no SharedAccessKeyName part"))

        let noHeadline = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "   "],
            environment: env
        )
        #expect(noHeadline.status == 2)
        #expect(noHeadline.stderr.contains(#"field "headline" is empty"#))

        for result in [badExpression, badString, noHeadline] {
            #expect(!(result.stdout + result.stderr).contains(Self.key))
        }
        let help = try await HubcastBinary.run(["send", "--help"], environment: env)
        #expect(!help.stdout.contains(Self.key))
        let debug = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "x", "--log-level", "trace", "--max-attempts", "1"],
            environment: env
        )
        #expect(!(debug.stdout + debug.stderr).contains(Self.key))
    }
}
