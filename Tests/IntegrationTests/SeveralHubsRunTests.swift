import Foundation
import TestSupport
import Testing

/// `hubcast run --routes` with two hubs, each an emulator process of its own: one refusing the
/// credentials holds only the items routed to it.
@Suite struct SeveralHubsRunTests {
    static func json(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    @Test func aHubRefusingCredentialsHoldsOnlyItsItemsAndNothingIsLostOrDeadLettered() async throws {
        let h = try await PipelineHarness(devices: 100)
        let sports = try await ServerProcess(
            HubcastBinary.path,
            ["emulator", "--hub", "sportshub", "--devices", "100", "--sample-payloads", "1", "--log-level", "warning"]
        )
        let sportsURL = PipelineHarness.url(of: sports)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hubcast-routes-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try h.emulator.firstLine.write(
            to: folder.appendingPathComponent("main.conn"),
            atomically: true,
            encoding: .utf8
        )
        try sports.firstLine.write(to: folder.appendingPathComponent("sports.conn"), atomically: true, encoding: .utf8)
        let routes = folder.appendingPathComponent("routes.yaml")
        try """
        hubs:
          main:
            hub: \(PipelineHarness.hub)
            connection-string-file: main.conn
          sports:
            hub: sportshub
            connection-string-file: sports.conn
        categories:
          Sports: sports
        tenants:
          brand-b: sports
        default: main
        """.write(to: routes, atomically: true, encoding: .utf8)

        // The sports hub refuses the credentials of every send until told otherwise.
        _ = try await ChildProcess.run(
            "curl",
            ["-sf", "-X", "POST", "--data", #"{"status":401}"#, sportsURL + "_emulator/faults"]
        )
        let run = try h.start(
            [
                "run", "--brokers", h.broker.bootstrap, "--routes", routes.path, "--dlq", "file:" + h.dlq.path,
                "--metrics-interval", "1", "--retry-base-ms", "10", "--retry-max-ms", "200",
            ],
            environment: [:]
        )
        defer { if run.process.isRunning { run.process.terminate() } }
        // 600 items, a sixth of them Sports; and 30 World items of tenant brand-b, which go to the
        // sports hub from the World partitions, between World items that go to the main hub.
        try await h.produce(
            0..<600,
            extra: (0..<30).map {
                ("news.world", #"{"id":"brand-b-\#($0)","headline":"Brand B \#($0)","tenant":"brand-b"}"#)
            }
        )

        // Every item of the main hub goes while the sports hub still refuses.
        let mainDone = try await poll(every: .milliseconds(100), timeout: .seconds(120)) {
            try await h.acceptedSends() >= 500 ? true : nil
        }
        #expect(mainDone == true, "the main hub's items did not all go\n\(run.stderr.text.suffix(3000))")
        #expect(
            try await PipelineHarness.acceptedSends(at: sportsURL) == 0,
            "the sports hub accepted nothing while it refused"
        )
        let held = await run.stdout.first(timeout: .seconds(30)) { line in
            guard let hubs = Self.json(line.text)?["hubs"] as? [String: [String: Any]] else { return false }
            return hubs["sports"]?["available"] as? Bool == false && hubs["main"]?["sent"] as? Int == 500
        }
        #expect(held != nil, "no metrics line showed the sports hub held\n\(run.stdout.text.suffix(2000))")
        #expect(
            run.stderr.text.contains("The hub is unavailable") && run.stderr.text.contains("hub=sports"),
            "\(run.stderr.text.suffix(3000))"
        )
        #expect(try await h.committedTotal() < 630, "the sports hub's items are not committed while held")

        // The hub takes the credentials again: its items follow, each once, and everything commits.
        _ = try await ChildProcess.run("curl", ["-sf", "-X", "DELETE", sportsURL + "_emulator/faults"])
        let sportsDone = try await poll(every: .milliseconds(100), timeout: .seconds(120)) {
            try await PipelineHarness.acceptedSends(at: sportsURL) >= 130 ? true : nil
        }
        #expect(sportsDone == true, "the sports hub's items did not follow\n\(run.stderr.text.suffix(3000))")
        let committed = try await poll(every: .milliseconds(100), timeout: .seconds(60)) {
            try await h.committedTotal() == 630 ? true : nil
        }
        let total = try await h.committedTotal()
        #expect(committed == true, "not everything was committed: \(total)")
        run.process.terminate()
        let result = await run.finish()
        #expect(result.status == 0, "\(result.stderr.suffix(3000))")
        #expect(try await h.acceptedSends() == 500, "the main hub sent each of its items once")
        #expect(
            try await PipelineHarness.acceptedSends(at: sportsURL) == 130,
            "the sports hub sent each of its items once"
        )
        let deadLetters = try h.deadLetters()
        #expect(deadLetters.isEmpty, "nothing was dead-lettered: \(deadLetters)")
        let final = try #require(try PipelineHarness.metricsLines(result.stdout).last)
        let hubs = try #require(final["hubs"] as? [String: [String: Any]])
        #expect(hubs["main"]?["sent"] as? Int == 500)
        #expect(hubs["sports"]?["sent"] as? Int == 130)
        #expect(hubs["sports"]?["available"] as? Bool == true)
        #expect(final["sent"] as? Int == 630)
        try await PipelineHarness.validateMetrics(result.stdout)

        // Dead letters name their hub, and a replay takes one hub's.
        let records = ["main", "sports", "sports"].enumerated().map { n, hub in
            #"{"reason":"server-error","error":"HTTP 503","status":503,"attempts":5,"itemId":"d-\#(n)","#
                + #""category":"World","audience":"World","platform":"template","hub":"\#(hub)","#
                + #""source":{"topic":"news.world","partition":0,"offset":\#(n)},"#
                + #""message":"{\"id\":\"d-\#(n)\",\"headline\":\"h\"}","deadLetteredAt":"2026-11-27T00:00:00.000Z"}"#
        }
        try (records.joined(separator: "\n") + "\n").write(to: h.dlq, atomically: true, encoding: .utf8)
        let sportsOnly = try await h.replay(["--from", "file:" + h.dlq.path, "--dry-run", "--from-hub", "sports"])
        #expect(
            sportsOnly.stdout.hasPrefix("dry run: 2 sends would go out"),
            "\(sportsOnly.stdout)\(sportsOnly.stderr)"
        )
        // With the routes, one replay sends each record back to the hub it failed at.
        let replay = [
            "replay", "--brokers", h.broker.bootstrap, "--from", "file:" + h.dlq.path, "--routes", routes.path,
        ]
        let planned = try await HubcastBinary.run(replay + ["--dry-run"], environment: [:], timeout: .seconds(60))
        #expect(planned.stdout.contains("by hub: main 1, sports 2"), "\(planned.stdout)\(planned.stderr)")
        let replayed = try await HubcastBinary.run(
            replay + ["--metrics-interval", "1", "--retry-base-ms", "10"],
            environment: [:],
            timeout: .seconds(120)
        )
        #expect(replayed.status == 0, "\(replayed.stderr.suffix(2000))")
        #expect(try await h.acceptedSends() == 501, "the main hub's one record went back to it")
        #expect(try await PipelineHarness.acceptedSends(at: sportsURL) == 132, "the sports hub's two went back to it")
    }

    @Test func aRoutesFileNamingAMissingSecretIsRefusedNamingTheField() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hubcast-routes-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let routes = folder.appendingPathComponent("routes.yaml")
        try "hubs:\n  eu: {hub: news-eu, connection-string-file: missing.conn}\n".write(
            to: routes,
            atomically: true,
            encoding: .utf8
        )
        let result = try await HubcastBinary.run(
            ["run", "--brokers", "127.0.0.1:1", "--routes", routes.path],
            environment: [:],
            timeout: .seconds(30)
        )
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("--routes: hubs.eu.connection-string-file: cannot read")
                && result.stderr.contains("missing.conn"),
            "\(result.stderr)"
        )
        // --routes names the hubs: a hub named beside it is a mistake, not a fallback.
        let both = try await HubcastBinary.run(
            ["run", "--brokers", "127.0.0.1:1", "--routes", routes.path, "--hub", "news"],
            environment: [:],
            timeout: .seconds(30)
        )
        #expect(both.status == 2)
        #expect(both.stderr.contains("drop --hub and the connection string"), "\(both.stderr)")
    }
}
