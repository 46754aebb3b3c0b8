import Foundation
import TestSupport
import Testing

/// The real binary when the hub misbehaves or the input is hostile: stops stay bounded, the hub's
/// failures are not the items', and nothing in an item crashes the process.
@Suite(.serialized) struct PipelineFaultTests {
    /// The line of the run's metrics that reports the hub as unavailable.
    static func hubUnavailable(_ line: String) -> Bool { line.contains(#""hubAvailable":false"#) }

    @Test func sigtermWhileTheHubRefusesConnectionsExitsWithinTheDrainTimeout() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await h.faults(#"{"latencyMs":20}"#)
        try await h.produce(0..<300)
        let run = try h.startRun(["--concurrency", "8", "--drain-timeout", "5"], exitWhenIdle: nil)
        try await h.waitForDeliveries(100)
        // The hub goes away: every connection is refused from now on. Items published after it
        // are sends that must meet the refusal, however many of the first ones were delivered
        // by the time the test saw 100 (on a busy machine, all of them).
        kill(h.emulator.process.processIdentifier, SIGKILL)
        try await h.produce(300..<2000)
        let held = await run.stdout.line(where: Self.hubUnavailable)
        #expect(held != nil, "the run never reported the hub unavailable")
        let signalled = ContinuousClock.now
        run.process.terminate()
        let result = await run.finish()
        let took = ContinuousClock.now - signalled
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(took < .seconds(7), "SIGTERM took \(took) with a 5 s drain timeout")
        #expect(try h.deadLetters().isEmpty, "a hub that refuses connections is not the items' fault")
        #expect(try PipelineHarness.metricsLines(result.stdout).last?["final"] as? Bool == true)
        #expect(result.stderr.contains("The hub is unavailable"))
    }

    @Test func aSecondSigtermFinishesAtOnceWhileTheDrainWouldWaitAnHour() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await h.faults(#"{"latencyMs":20}"#)
        try await h.produce(0..<300)
        let run = try h.startRun(
            ["--concurrency", "8", "--drain-timeout", "3600", "--request-timeout", "120"],
            exitWhenIdle: nil
        )
        try await h.waitForDeliveries(100)
        // The hub hangs: sends in flight never end by themselves. Items published after it make
        // sure some are in flight when the signal comes: the second metrics line after them was
        // sampled after the stop, so sends it counts in flight hang.
        kill(h.emulator.process.processIdentifier, SIGSTOP)
        defer { kill(h.emulator.process.processIdentifier, SIGCONT) }
        try await h.produce(300..<2000)
        let published = ContinuousClock.now
        let next = await run.stdout.first { $0.at > published && $0.text.contains(#""inFlight""#) }
        let hanging = await run.stdout.first { line in
            guard let next, line.at > next.at else { return false }
            return ((try? PipelineHarness.metricsLines(line.text))?.first?["inFlight"] as? Int ?? 0) > 0
        }
        #expect(hanging != nil, "no send was in flight on the stopped hub; the test proves nothing")
        run.process.terminate()
        #expect(await run.stderr.line { $0.contains("Signal received: draining") } != nil)
        let signalled = ContinuousClock.now
        run.process.terminate()
        let result = await run.finish()
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(ContinuousClock.now - signalled < .seconds(10))
        #expect(result.stderr.contains("Second signal: finishing now"))
        #expect(try PipelineHarness.metricsLines(result.stdout).last?["final"] as? Bool == true)
    }

    @Test func refusedCredentialsHoldTheSendsAndDeadLetterNothing() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await h.faults(#"{"latencyMs":10}"#)
        try await h.produce(0..<300)
        let run = try h.startRun(["--concurrency", "8"], exitWhenIdle: nil)
        try await h.waitForDeliveries(100)
        // The hub starts refusing the credentials (as after a key rotation); what is published
        // from now on meets the refusal …
        try await h.faults(#"{"status":401}"#)
        try await h.produce(300..<1500)
        #expect(await run.stdout.line(where: Self.hubUnavailable) != nil)
        // … and accepts them again: the pipeline resumes by itself.
        try await h.clearFaults()
        try await h.waitForEveryItem(0..<1500)
        run.process.terminate()
        let result = await run.finish()
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        let dead = try h.deadLetters()
        #expect(dead.isEmpty, "\(dead.prefix(2))")
        #expect(result.stderr.contains("The hub is available again"))
        #expect(Set(try await h.deliveries().map(\.headline)) == Set((0..<1500).map { "Headline \($0)" }))
        #expect(try await h.committedTotal() == 1500)
    }

    @Test func aTagExpressionNested32000DeepIsDeadLetteredAndTheItemsAroundItAreDelivered() async throws {
        let h = try await PipelineHarness(devices: 100, partitions: 1)
        let deep = String(repeating: "(", count: 32_000) + "World" + String(repeating: ")", count: 32_000)
        let poison = #"{"id":"poison","headline":"Deep","tagExpression":"\#(deep)"}"#
        try await h.produce(0..<300, extra: [("news.world", poison)])
        try await h.produce(300..<600)
        let result = try await h.run()
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        let dead = try h.deadLetters()
        #expect(dead.count == 1)
        #expect(dead.first?["reason"] as? String == "invalid")
        #expect((dead.first?["error"] as? String ?? "").contains("64 levels"), "\(dead.first?["error"] ?? "-")")
        #expect(Set(try await h.deliveries().map(\.headline)) == Set((0..<600).map { "Headline \($0)" }))
        #expect(try await h.committedTotal() == 601)
    }
}
