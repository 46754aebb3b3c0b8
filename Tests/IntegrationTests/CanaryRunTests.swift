import Foundation
import HubEmulator
import Logging
import NotificationHubs
import TestSupport
import Testing

/// The canary on the real binary: `run --canary-every` against the dev broker and the emulator,
/// with a test device on the canary tag; `canary --once` asking the running group; refused
/// credentials; three instances of one group.
@Suite(.serialized) struct CanaryRunTests {
    static let tag = "hubcast-canary"

    /// The canary lines of a run's stdout, parsed.
    static func canaries(_ lines: [String]) -> [[String: Any]] {
        lines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["canary"] as? [String: Any]
        }
    }

    static func isCanary(_ line: String, outcome: String, reason: String? = nil) -> Bool {
        guard let canary = canaries([line]).first else { return false }
        return canary["outcome"] as? String == outcome && (reason == nil || canary["reason"] as? String == reason)
    }

    /// One test device that carries the canary tag, registered as an app would.
    static func registerTestDevice(_ h: PipelineHarness) async throws {
        let client = try h.hubClient()
        let id = try await client.createRegistrationID()
        try await client.upsertRegistration(
            Registration(
                platform: .apple,
                handle: "test-phone",
                tags: [tag],
                template: SimulatedAudience.seedTemplate
            ),
            id: id
        )
    }

    func canaryOnce(_ h: PipelineHarness, timeout: Int) async throws -> HubcastBinary.Result {
        try await HubcastBinary.run(
            ["canary", "--once", "--brokers", h.broker.bootstrap, "--timeout", String(timeout)],
            timeout: .seconds(120)
        )
    }

    @Test func canariesAreVerifiedEveryIntervalAndRefusedCredentialsFailThemAndTheGate() async throws {
        let h = try await PipelineHarness(devices: 10)
        try await Self.registerTestDevice(h)
        let port = freeLoopbackPort()
        let run = try h.startRun(["--canary-every", "1s", "--http-port", String(port)], exitWhenIdle: nil)
        defer { if run.process.isRunning { run.process.terminate() } }

        // Every interval, one canary, verified through the hub's telemetry: it reached the device.
        let fifth = await run.stdout.nth(5, timeout: .seconds(120)) { Self.isCanary($0, outcome: "verified") }
        #expect(
            fifth != nil,
            "five verified canaries never came\n\(run.stdout.text.suffix(2000))\n\(run.stderr.text.suffix(2000))"
        )
        let verified = Self.canaries(run.stdout.lines.map(\.text)).filter { $0["outcome"] as? String == "verified" }
        #expect(
            verified.allSatisfy { $0["devices"] as? Int == 1 && ($0["endToEndMs"] as? Int ?? -1) >= 0 },
            "\(verified)"
        )
        let toDevice = try await h.deliveries().filter { $0.tags == Self.tag }
        #expect(toDevice.count >= 5 && toDevice.allSatisfy { $0.matched == 1 }, "\(toDevice)")

        // The gate: one canary through the running group, verified, exit 0.
        let gate = try await canaryOnce(h, timeout: 20)
        #expect(gate.status == 0, "\(gate.stdout)\n\(gate.stderr)")
        #expect(
            Self.canaries(gate.stdout.split(separator: "\n").map(String.init)).first?["outcome"] as? String
                == "verified",
            "\(gate.stdout)"
        )
        let metrics = try await HealthEndpointTests.get("http://127.0.0.1:\(port)/metrics").body
        #expect(metrics.contains("hubcast_canary_last_success_timestamp_seconds "), "\(metrics.prefix(3000))")
        #expect(metrics.contains("hubcast_canary_e2e_seconds_count"), "\(metrics.prefix(3000))")

        // Credentials refused: the next canary fails within its interval, saying why, and counted.
        try await h.faults(#"{"status":401}"#)
        let failed = await run.stdout.first(timeout: .seconds(60)) {
            Self.isCanary($0.text, outcome: "failed", reason: "unauthorized")
        }
        #expect(failed != nil, "no canary failed as unauthorized\n\(run.stdout.text.suffix(2000))")
        let refusedGate = try await canaryOnce(h, timeout: 2)
        #expect(refusedGate.status == 1, "\(refusedGate.stdout)\n\(refusedGate.stderr)")
        #expect(refusedGate.stderr.contains("the canary failed: unauthorized"), "\(refusedGate.stderr)")
        let failures = try await HealthEndpointTests.get("http://127.0.0.1:\(port)/metrics").body
        #expect(failures.contains(#"hubcast_canary_failures_total{reason="unauthorized"}"#), "\(failures.prefix(3000))")

        // Back: verified again, and the run stops cleanly.
        try await h.clearFaults()
        let before = Self.canaries(run.stdout.lines.map(\.text)).filter { $0["outcome"] as? String == "verified" }.count
        let again = await run.stdout.nth(before + 1, timeout: .seconds(60)) { Self.isCanary($0, outcome: "verified") }
        #expect(again != nil, "no canary verified once the credentials were accepted again")
        run.process.terminate()
        let result = await run.finish()
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        // A canary never goes to the dead letters.
        #expect(try h.deadLetters().isEmpty)
        // Each stdout line is a metrics line or a canary line, as their schemas say.
        let lines = result.stdout.split(separator: "\n").map(String.init)
        try await PipelineHarness.validateMetrics(
            lines.filter { $0.hasPrefix(#"{"canary""#) }.joined(separator: "\n"),
            schema: "canary.schema.json"
        )
        try await PipelineHarness.validateMetrics(lines.filter { !$0.hasPrefix(#"{"canary""#) }.joined(separator: "\n"))
        try await PipelineHarness.validateMetrics(gate.stdout, schema: "canary.schema.json")
    }

    @Test func threeInstancesOfOneGroupSendOneCanaryPerIntervalBetweenThem() async throws {
        let h = try await PipelineHarness(devices: 10)
        try await Self.registerTestDevice(h)
        let runs = try (0..<3).map { _ in try h.startRun(["--canary-every", "1"], exitWhenIdle: nil) }
        defer { for run in runs where run.process.isRunning { run.process.terminate() } }
        // All three have joined (each holds partitions); then six more canaries come.
        for run in runs {
            let assigned = await run.stderr.first(timeout: .seconds(120)) { $0.text.contains("Partitions assigned") }
            #expect(assigned != nil, "an instance never got partitions\n\(run.stderr.text.suffix(2000))")
        }
        let baseline = runs.map { Self.canaries($0.stdout.lines.map(\.text)).count }.reduce(0, +)
        _ = try await poll(every: .milliseconds(100), timeout: .seconds(120)) {
            runs.map { Self.canaries($0.stdout.lines.map(\.text)).count }.reduce(0, +) >= baseline + 8 ? true : nil
        }
        for run in runs { run.process.terminate() }
        var all: [[String: Any]] = []
        for run in runs {
            let result = await run.finish()
            #expect(result.status == 0, "\(result.stderr.suffix(2000))")
            all += Self.canaries(result.stdout.split(separator: "\n").map(String.init))
        }
        // The last six by time: asked for by the instance holding the canary partition, one per
        // interval (its sequence numbers follow on). Should the partition move meanwhile (a late
        // rebalance), the next holder goes on: the asker changes at most once, never back and forth.
        let last = all.sorted { ($0["atMs"] as? Int ?? 0) < ($1["atMs"] as? Int ?? 0) }.suffix(6)
        let ids = last.compactMap { $0["id"] as? String }
        let askers = ids.map { $0.split(separator: "-").dropLast().joined(separator: "-") }
        let changes = zip(askers, askers.dropFirst()).filter { $0 != $1 }.count
        #expect(ids.count == 6 && changes <= 1, "canaries asked for by several instances at once: \(ids)")
        for asker in Set(askers) {
            let numbers = ids.filter { $0.hasPrefix(asker + "-") }.compactMap {
                $0.split(separator: "-").last.flatMap { Int($0) }
            }.sorted()
            #expect(
                numbers == Array((numbers.first ?? 0)...(numbers.last ?? 0)),
                "\(asker) skipped or repeated an interval: \(ids)"
            )
        }
        #expect(Set(all.compactMap { $0["id"] as? String }).count == all.count, "a canary reported twice: \(all)")
        #expect(last.allSatisfy { $0["outcome"] as? String == "verified" }, "\(Array(last))")
    }
}
