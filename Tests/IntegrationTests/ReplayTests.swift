import Foundation
import News
import Testing
import TestSupport

/// `hubcast replay` (the real binary) against dead letters that a real `hubcast run` produced.
@Suite(.serialized) struct ReplayTests {
    /// A hub failing with 503 dead-letters every send of items 0..<count, once per run (each run its own group).
    func failedRuns(_ h: PipelineHarness, count: Int, sink: String, runs: Int = 2, extra: [(topic: String, value: String)] = []) async throws {
        try await h.faults(#"{"status":503}"#)
        try await h.produce(0..<count, extra: extra)
        for group in ["first", "second", "third"].prefix(runs) {
            let run = try await h.run(["--group", group, "--max-attempts", "2"], dlq: sink)
            #expect(run.status == 0, "\(run.stderr.suffix(1500))")
        }
        try await h.clearFaults()
    }

    @Test func replayFromKafkaDeliversEachOnceAndASecondReplaySendsNothing() async throws {
        let h = try PipelineHarness(devices: 100)
        // Plus one message that is not a news item: dead-lettered as invalid, and never re-sent.
        try await failedRuns(h, count: 40, sink: "kafka:news.deadletter", extra: [("news.world", #"{"id":"no-headline"}"#)])
        #expect(try await h.acceptedSends() == 0)

        let dry = try await h.replay(["--from", "kafka:news.deadletter", "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr.suffix(1500))")
        #expect(dry.stdout.hasPrefix("dry run: 40 sends would go out; nothing was sent"))
        #expect(dry.stdout.contains("records read 82: corrupt 0, filtered out 0, still invalid 2, expired 0, duplicates 40"), "\(dry.stdout)")
        #expect(dry.stdout.contains("by reason: server-error 40"))
        #expect(try await h.acceptedSends() == 0, "a dry run reached the hub")

        let first = try await h.replay(["--from", "kafka:news.deadletter"])
        #expect(first.status == 0, "\(first.stderr.suffix(1500))")
        let delivered = try await h.deliveries()
        #expect(delivered.count == 40)
        #expect(Set(delivered.map(\.headline)) == Set((0..<40).map { "Headline \($0)" }))
        #expect(first.stderr.contains("replay done: read 82, sent 40, skipped 42, failed 0"), "\(first.stderr.suffix(500))")
        let final = try #require(try PipelineHarness.metricsLines(first.stdout).last)
        #expect(final["sent"] as? Int == 40 && final["duplicates"] as? Int == 40)

        let second = try await h.replay(["--from", "kafka:news.deadletter"])
        #expect(second.status == 0)
        #expect(second.stderr.contains("replay done: read 0, sent 0"))
        #expect(try await h.acceptedSends() == 40)
    }

    @Test func filtersCorruptLinesAndRateLimitFromAFile() async throws {
        let h = try PipelineHarness(devices: 100)
        try await failedRuns(h, count: 60, sink: "file:" + h.dlq.path)
        var lines = try String(contentsOf: h.dlq, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 120)
        lines.insert("{this is not a record", at: 5)
        lines.insert(#"{"reason":"server-error"}"#, at: 9)
        try (lines.joined(separator: "\n") + "\n").write(to: h.dlq, atomically: true, encoding: .utf8)

        // Filters, in a dry run: only World and Science, only these ids.
        let filtered = try await h.replay(["--from", "file:" + h.dlq.path, "--dry-run", "--category", "World,Science", "--id", "item-0", "--id", "item-4", "--id", "item-5"])
        #expect(filtered.stdout.hasPrefix("dry run: 2 sends would go out"), "\(filtered.stdout)")
        #expect(filtered.stdout.contains("by category: Science 1, World 1"))
        let none = try await h.replay(["--from", "file:" + h.dlq.path, "--dry-run", "--reason", "throttled"])
        #expect(none.stdout.hasPrefix("dry run: 0 sends would go out"))
        let future = try await h.replay(["--from", "file:" + h.dlq.path, "--dry-run", "--since", "2099-01-01T00:00:00Z"])
        #expect(future.stdout.hasPrefix("dry run: 0 sends would go out"))
        let status = try await h.replay(["--from", "file:" + h.dlq.path, "--dry-run", "--status", "503", "--until", "2099-01-01T00:00:00Z"])
        #expect(status.stdout.hasPrefix("dry run: 60 sends would go out"))
        // Corrupt lines are reported with their line numbers and skipped, never fatal.
        #expect(status.stderr.contains("replay: line 6: corrupt dead-letter record (not a JSON object), skipped"))
        #expect(status.stderr.contains("replay: line 10: corrupt dead-letter record (no \"message\"), skipped"))
        #expect(try await h.acceptedSends() == 0)

        // Rate limit: 60 sends at 20/s take about 3 s; the measured average stays under the cap.
        let limited = try await h.replay(["--from", "file:" + h.dlq.path, "--rate", "20"])
        #expect(limited.status == 0, "\(limited.stderr.suffix(1500))")
        let times = try await h.deliveries().map(\.at).sorted()
        #expect(times.count == 60)
        let average = Double(times.count - 1) / max(0.001, (times.last ?? 0) - (times.first ?? 0))
        #expect(average <= 20 * 1.25, "averaged \(average) sends/s")
        #expect(average >= 5, "averaged \(average) sends/s: far slower than asked")
        let again = (try? String(contentsOfFile: h.dlq.path + ".replay.jsonl", encoding: .utf8)) ?? ""
        #expect(again.isEmpty, "nothing failed, so nothing was dead-lettered again")
    }

    @Test func anInterruptedReplayResumesWhereItStopped() async throws {
        let h = try PipelineHarness(devices: 100)
        // One copy of each record: across two replays, only the group's committed position prevents repeats.
        try await failedRuns(h, count: 400, sink: "kafka:news.deadletter", runs: 1)
        // 50 ms per send at 4 in flight: about 5 s of replay, so the interruption lands part-way even on a busy machine.
        try await h.faults(#"{"latencyMs":50}"#)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: HubcastBinary.path)
        process.arguments = ["replay", "--brokers", h.broker.bootstrap, "--hub", PipelineHarness.hub, "--from", "kafka:news.deadletter",
                             "--concurrency", "4"]
        process.environment = ProcessInfo.processInfo.environment.merging(h.environment) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await h.waitForDeliveries(100)
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let partial = try await h.deliveries().count
        #expect(partial < 400, "the replay finished before it was interrupted; the test proves nothing")

        try await h.clearFaults()
        let resumed = try await h.replay(["--from", "kafka:news.deadletter"])
        #expect(resumed.status == 0)
        let all = try await h.deliveries()
        #expect(Set(all.map(\.headline)) == Set((0..<400).map { "Headline \($0)" }))
        #expect(all.count == 400, "\(all.count - 400) items were sent twice across the interruption")
    }
}
