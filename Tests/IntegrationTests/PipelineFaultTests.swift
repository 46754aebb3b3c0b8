import Foundation
import Testing
import TestSupport

/// The real binary when the hub misbehaves or the input is hostile: stops stay bounded, the hub's
/// failures are not the items', and nothing in an item crashes the process.
@Suite(.serialized) struct PipelineFaultTests {
    /// The line of the run's metrics that reports the hub as unavailable.
    static func hubUnavailable(_ line: String) -> Bool { line.contains(#""hubAvailable":false"#) }

    @Test func sigtermWhileTheHubRefusesConnectionsExitsWithinTheDrainTimeout() async throws {
        let h = try PipelineHarness(devices: 100)
        try await h.faults(#"{"latencyMs":20}"#)
        try await h.produce(0..<2000)
        let run = try h.startRun(["--concurrency", "8", "--drain-timeout", "5"])
        try await h.waitForDeliveries(100)
        // The hub goes away: every connection is refused from now on.
        kill(h.emulator.process.processIdentifier, SIGKILL)
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
        let h = try PipelineHarness(devices: 100)
        try await h.faults(#"{"latencyMs":20}"#)
        try await h.produce(0..<2000)
        let run = try h.startRun(["--concurrency", "8", "--drain-timeout", "3600", "--request-timeout", "120"])
        try await h.waitForDeliveries(100)
        // The hub hangs: sends in flight never end by themselves.
        kill(h.emulator.process.processIdentifier, SIGSTOP)
        defer { kill(h.emulator.process.processIdentifier, SIGCONT) }
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
        let h = try PipelineHarness(devices: 100)
        try await h.faults(#"{"latencyMs":10}"#)
        try await h.produce(0..<1500)
        let run = try h.startRun(["--concurrency", "8"])
        try await h.waitForDeliveries(100)
        // The hub starts refusing the credentials (as after a key rotation) …
        try await h.faults(#"{"status":401}"#)
        #expect(await run.stdout.line(where: Self.hubUnavailable) != nil)
        // … and accepts them again: the pipeline resumes by itself.
        try await h.clearFaults()
        let result = await run.finish()
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        let dead = try h.deadLetters()
        #expect(dead.isEmpty, "\(dead.prefix(2))")
        #expect(result.stderr.contains("The hub is available again"))
        #expect(Set(try await h.deliveries().map(\.headline)) == Set((0..<1500).map { "Headline \($0)" }))
        #expect(try await h.committedTotal() == 1500)
    }

    @Test func aTagExpressionNested32000DeepIsDeadLetteredAndTheItemsAroundItAreDelivered() async throws {
        let h = try PipelineHarness(devices: 100, partitions: 1)
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
