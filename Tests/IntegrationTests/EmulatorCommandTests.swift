import Foundation
import NotificationHubs
import TestSupport
import Testing

/// `hubcast emulator` as a process, driven with raw HTTP from curl.
@Suite struct EmulatorCommandTests {
    /// `hubcast outcome`: a sent notification's telemetry as one line of its schema; an id the hub
    /// never gave, a refused key and an unreachable hub end with their exit codes (1, 2, 3).
    @Test func outcomeSaysWhatTheHubDidWithASend() async throws {
        let server = try await ServerProcess(
            HubcastBinary.path,
            ["emulator", "--hub", "breaking", "--devices", "200", "--seed", "7", "--log-level", "warning"]
        )
        defer { server.stop() }
        let env = ["HUBCAST_CONNECTION_STRING": server.firstLine, "HUBCAST_HUB": "breaking"]
        let sent = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "Quake"],
            environment: env
        )
        #expect(sent.status == 0, "\(sent.stderr)")
        let id = try #require(sent.stdout.firstMatch(of: /notification id ([0-9A-Za-z_-]+),/)?.output.1)
        let outcome = try await HubcastBinary.run(["outcome", String(id)], environment: env)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        try await PipelineHarness.validateMetrics(outcome.stdout, schema: "outcome.schema.json")
        let line = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any]
        )
        #expect(line["id"] as? String == String(id))
        #expect(line["state"] as? String == "Completed" && line["final"] as? Bool == true)
        let reached = (line["platforms"] as? [String: [String: Int]])?["Template"]?["Success"] ?? 0
        let deliveries = try await curl([
            "-f", try ConnectionString(parsing: server.firstLine).baseURL + "_emulator/deliveries",
        ])
        #expect(
            reached > 0 && deliveries.contains(#""matched":\#(reached)"#),
            "\(outcome.stdout) \(deliveries.prefix(300))"
        )

        let unknown = try await HubcastBinary.run(["outcome", "424242"], environment: env)
        #expect(
            unknown.status == 1 && unknown.stderr.contains("no telemetry for notification 424242"),
            "\(unknown.stderr)"
        )
        let refusedKey = server.firstLine.replacingOccurrences(of: "SharedAccessKey=", with: "SharedAccessKey=x")
        let refused = try await HubcastBinary.run(
            ["outcome", String(id)],
            environment: ["HUBCAST_CONNECTION_STRING": refusedKey, "HUBCAST_HUB": "breaking"]
        )
        #expect(refused.status == 2 && refused.stderr.contains("refused the credentials"), "\(refused.stderr)")
        let closed =
            "Endpoint=sb://127.0.0.1:\(freeLoopbackPort())/;SharedAccessKeyName=k;SharedAccessKey=a2V5;UseDevelopmentEmulator=true"
        let unreachable = try await HubcastBinary.run(
            ["outcome", "1", "--max-attempts", "1"],
            environment: ["HUBCAST_CONNECTION_STRING": closed, "HUBCAST_HUB": "breaking"]
        )
        #expect(unreachable.status == 3, "\(unreachable.stderr)")
        let badID = try await HubcastBinary.run(["outcome", "../registrations"], environment: env)
        #expect(badID.status == 2, "\(badID.stderr)")
        // --wait shorter than the 10 s between asks: the first 404 is the answer.
        let waited = try await HubcastBinary.run(["outcome", "424242", "--wait", "1"], environment: env)
        #expect(waited.status == 1 && waited.stderr.contains("no telemetry"), "\(waited.stderr)")
        let tooLong = try await HubcastBinary.run(["outcome", "1", "--wait", "3601"], environment: env)
        #expect(tooLong.status == 2 && tooLong.stderr.contains("--wait"), "\(tooLong.stderr)")
    }

    @Test func seed000FlowWithCurl() async throws {
        let server = try await ServerProcess(
            HubcastBinary.path,
            ["emulator", "--hub", "breaking", "--devices", "200", "--log-level", "warning"]
        )
        defer { server.stop() }
        let connection = try ConnectionString(parsing: server.firstLine)
        let base = connection.baseURL
        let token = SASToken(
            resourceURI: base + "breaking",
            keyName: connection.keyName,
            key: try secret(of: server.firstLine),
            expiry: Int64(Date().timeIntervalSince1970) + 600
        ).header

        let created = try await curl([
            "-i", "-X", "POST", "-H", "Authorization: \(token)", base + "breaking/registrationIDs?api-version=2015-01",
        ])
        let location = try #require(created.split(separator: "\r\n").first { $0.lowercased().hasPrefix("location:") })
        let id = try #require(location.split(separator: "/").last?.split(separator: "?").first)
        let entry = Registration(
            platform: .apple,
            handle: "curl-device",
            tags: ["Technology", "username:carol"],
            template: .init(
                body: #"{"aps":{"alert":"$(messageParam)"}}"#,
                name: "simpleAPNSTemplate",
                expiry: "0"
            )
        ).atomEntry
        _ = try await curl([
            "-f", "-X", "PUT", "-H", "Authorization: \(token)", "-H",
            "Content-Type: application/atom+xml;type=entry;charset=utf-8",
            "--data-binary", entry, base + "breaking/registrations/\(id)?api-version=2015-01",
        ])
        let sent = try await curl([
            "-i", "-X", "POST", "-H", "Authorization: \(token)", "-H", "ServiceBusNotification-Format: template",
            "-H", "ServiceBusNotification-Tags: username:carol", "-H", "Content-Type: application/json;charset=utf-8",
            "--data-binary", #"{"messageParam":"Breaking Technology News : Chip"}"#,
            base + "breaking/messages/?api-version=2015-01",
        ])
        #expect(sent.hasPrefix("HTTP/1.1 201"))
        #expect(sent.contains("/breaking/messages/1?api-version="))

        let deliveries = try await curl(["-f", base + "_emulator/deliveries"])
        #expect(deliveries.contains(#""matched":1"#))
        #expect(deliveries.contains(#"{\"aps\":{\"alert\":\"Breaking Technology News : Chip\"}}"#))
        #expect(deliveries.contains("registration:\(id)"))

        // Unknown hub and a send without a token, as NH answers them.
        #expect(
            try await curl([
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                base + "other/messages/?api-version=2015-01",
            ]) == "404"
        )
        #expect(
            try await curl([
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
                base + "breaking/messages/?api-version=2015-01",
            ]) == "401"
        )
        let stats = try await curl(["-f", base + "_emulator/stats"])
        #expect(stats.contains(#""registrations":201"#))
    }

    private func curl(_ arguments: [String]) async throws -> String {
        let result = try await ChildProcess.run("curl", ["-s"] + arguments)
        #expect(result.status == 0, "curl \(arguments): \(result.stderr)")
        return result.stdout
    }

    private func secret(of connectionString: String) throws -> String {
        let part = try #require(connectionString.split(separator: ";").first { $0.hasPrefix("SharedAccessKey=") })
        return String(part.dropFirst("SharedAccessKey=".count))
    }
}
