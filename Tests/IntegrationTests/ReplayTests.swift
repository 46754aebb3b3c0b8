import Foundation
import News
import TestSupport
import Testing

/// `hubcast replay` (the real binary) against dead letters that a real `hubcast run` produced.
@Suite(.serialized) struct ReplayTests {
    /// A hub refusing every send (400) dead-letters every send of items 0..<count, once per run (each run its own group).
    func failedRuns(
        _ h: PipelineHarness,
        count: Int,
        sink: String,
        runs: Int = 2,
        extra: [(topic: String, value: String)] = []
    ) async throws {
        try await h.faults(#"{"status":400}"#)
        try await h.produce(0..<count, extra: extra)
        for group in ["first", "second", "third"].prefix(runs) {
            let run = try await h.run(["--group", group, "--max-attempts", "2"], dlq: sink)
            #expect(run.status == 0, "\(run.stderr.suffix(1500))")
        }
        try await h.clearFaults()
    }

    /// A replay sends to the hub beside the running instances, so it shares the hub's quota with
    /// them through the quota topic: each hears the other while both send.
    @Test func aReplayBesideARunSharesTheQuotaWithIt() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await failedRuns(h, count: 300, sink: "kafka:news.deadletter", runs: 1)
        // A run with a backlog of its own at a known quota (200/s: 3,000 items take 15 s).
        try await h.produce(1000..<4000)
        let run = try h.startRun(["--group", "live", "--max-rate", "200"], exitWhenIdle: nil)
        let sending = await run.stdout.line(where: {
            ((try? PipelineHarness.metricsLines($0))?.first?["sent"] as? Int ?? 0) > 0
        })
        #expect(sending != nil, "the run never sent: \(run.stdout.text.suffix(1500))")
        let replay = try await h.replay(["--from", "kafka:news.deadletter", "--rate", "50"])
        #expect(replay.status == 0, "\(replay.stderr.suffix(2000))")
        let replayLines = try PipelineHarness.metricsLines(replay.stdout)
        #expect(
            replayLines.contains { $0["quotaPeers"] as? Int == 1 },
            "the replay never heard the run: \(replay.stdout.suffix(1500))"
        )
        let heard = try PipelineHarness.metricsLines(run.stdout.text).contains { $0["quotaPeers"] as? Int == 1 }
        run.process.terminate()
        let finished = await run.finish()
        #expect(finished.status == 0, "\(finished.stderr.suffix(2000))")
        #expect(heard, "the run never heard the replay: \(finished.stdout.suffix(1500))")
    }

    @Test func replayFromKafkaDeliversEachOnceAndASecondReplaySendsNothing() async throws {
        let h = try await PipelineHarness(devices: 100)
        // Plus one message that is not a news item: dead-lettered as invalid, and never re-sent.
        try await failedRuns(
            h,
            count: 40,
            sink: "kafka:news.deadletter",
            extra: [("news.world", #"{"id":"no-headline"}"#)]
        )
        #expect(try await h.acceptedSends() == 0)

        let dry = try await h.replay(["--from", "kafka:news.deadletter", "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr.suffix(1500))")
        #expect(dry.stdout.hasPrefix("dry run: 40 sends would go out; nothing was sent"))
        #expect(
            dry.stdout.contains(
                "records read 82: corrupt 0, filtered out 0, still invalid 2, expired 0, duplicates 40"
            ),
            "\(dry.stdout)"
        )
        #expect(dry.stdout.contains("by reason: bad-request 40"), "\(dry.stdout)")
        #expect(try await h.acceptedSends() == 0, "a dry run reached the hub")

        let first = try await h.replay(["--from", "kafka:news.deadletter"])
        #expect(first.status == 0, "\(first.stderr.suffix(1500))")
        let delivered = try await h.deliveries()
        #expect(delivered.count == 40)
        #expect(Set(delivered.map(\.headline)) == Set((0..<40).map { "Headline \($0)" }))
        #expect(
            first.stderr.contains("replay done: read 82, sent 40, skipped 42, failed 0"),
            "\(first.stderr.suffix(500))"
        )
        let final = try #require(try PipelineHarness.metricsLines(first.stdout).last)
        #expect(final["sent"] as? Int == 40 && final["duplicates"] as? Int == 40)

        let second = try await h.replay(["--from", "kafka:news.deadletter"])
        #expect(second.status == 0)
        #expect(second.stderr.contains("replay done: read 0, sent 0"))
        #expect(try await h.acceptedSends() == 40)
    }

    @Test func filtersCorruptLinesAndRateLimitFromAFile() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await failedRuns(h, count: 60, sink: "file:" + h.dlq.path)
        var lines = try String(contentsOf: h.dlq, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 120)
        lines.insert("{this is not a record", at: 5)
        lines.insert(#"{"reason":"server-error"}"#, at: 9)
        try (lines.joined(separator: "\n") + "\n").write(to: h.dlq, atomically: true, encoding: .utf8)

        // Filters, in a dry run: only World and Science, only these ids.
        let filtered = try await h.replay([
            "--from", "file:" + h.dlq.path, "--dry-run", "--category", "World,Science", "--id", "item-0", "--id",
            "item-4", "--id", "item-5",
        ])
        #expect(filtered.stdout.hasPrefix("dry run: 2 sends would go out"), "\(filtered.stdout)")
        #expect(filtered.stdout.contains("by category: Science 1, World 1"))
        let none = try await h.replay(["--from", "file:" + h.dlq.path, "--dry-run", "--reason", "throttled"])
        #expect(none.stdout.hasPrefix("dry run: 0 sends would go out"))
        let future = try await h.replay([
            "--from", "file:" + h.dlq.path, "--dry-run", "--since", "2099-01-01T00:00:00Z",
        ])
        #expect(future.stdout.hasPrefix("dry run: 0 sends would go out"))
        let status = try await h.replay([
            "--from", "file:" + h.dlq.path, "--dry-run", "--status", "400", "--until", "2099-01-01T00:00:00Z",
        ])
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
        let h = try await PipelineHarness(devices: 100)
        // One copy of each record: across two replays, only the group's committed position prevents repeats.
        try await failedRuns(h, count: 400, sink: "kafka:news.deadletter", runs: 1)
        // The hub takes 100 sends, then refuses the credentials: the replay holds the rest for as long
        // as it runs (--hub-wait 0), so it cannot finish before the signal however slowly this test
        // is scheduled, and the hub saw exactly 100.
        try await h.faults(#"{"status":401,"after":100}"#)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: HubcastBinary.path)
        process.arguments = [
            "replay", "--brokers", h.broker.bootstrap, "--hub", PipelineHarness.hub, "--from", "kafka:news.deadletter",
            "--concurrency", "4", "--hub-wait", "0",
        ]
        process.environment = ProcessInfo.processInfo.environment.merging(h.environment) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await h.waitForDeliveries(100)
        process.terminate()
        // Records it had read and not sent are left uncommitted, and it says so with a non-zero exit.
        #expect(process.reap() == 1)
        #expect(try await h.deliveries().count == 100)

        try await h.clearFaults()
        let resumed = try await h.replay(["--from", "kafka:news.deadletter"])
        #expect(resumed.status == 0)
        let all = try await h.deliveries()
        #expect(Set(all.map(\.headline)) == Set((0..<400).map { "Headline \($0)" }))
        #expect(all.count == 400, "\(all.count - 400) items were sent twice across the interruption")
    }

    /// A batch job fails fast on a hub it cannot use, as `run` does: credentials refused (2), a
    /// certificate it does not trust (3); nothing is read, so nothing is lost.
    @Test func aReplayChecksTheHubBeforeReadingAnything() async throws {
        let h = try await PipelineHarness(devices: 10)
        try await failedRuns(h, count: 5, sink: "file:" + h.dlq.path, runs: 1)
        let before = try String(contentsOf: h.dlq, encoding: .utf8)
        let wrongKey = h.environment["HUBCAST_CONNECTION_STRING", default: ""]
            .replacingOccurrences(of: "SharedAccessKey=", with: "SharedAccessKey=AAAA")
        let refused = try await HubcastBinary.run(
            h.replayArguments(["--from", "file:" + h.dlq.path]),
            environment: ["HUBCAST_CONNECTION_STRING": wrongKey]
        )
        #expect(
            refused.status == 2 && refused.stderr.contains("refused the credentials"),
            "\(refused.status): \(refused.stderr.suffix(800))"
        )

        let nginx = try await NginxProcess(tls: true)
        defer { nginx.stop() }
        let untrusted = "Endpoint=sb://127.0.0.1:\(nginx.port)/;SharedAccessKeyName=k;SharedAccessKey=a2V5"
        for command in [
            h.replayArguments(["--from", "file:" + h.dlq.path]),
            ["send", "--hub", PipelineHarness.hub, "--category", "World", "--headline", "x"],
        ] {
            let result = try await HubcastBinary.run(command, environment: ["HUBCAST_CONNECTION_STRING": untrusted])
            #expect(
                result.status == 3,
                "\(command[0]): \(result.status): \(result.stdout.suffix(400)) \(result.stderr.suffix(800))"
            )
        }
        #expect(try String(contentsOf: h.dlq, encoding: .utf8) == before, "the records to replay changed")
        #expect(try await h.acceptedSends() == 0)
    }

    /// A hub lost once the replay runs: after --hub-wait it stops, exits 1 and names what it did not
    /// send; from a file, those records (held, and never read) go to --dlq as they were. A replay
    /// stopped by SIGTERM while held does the same. Replaying the result sends each item once.
    @Test func whatAReplayCouldNotSendIsLeftToReplayOnce() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await failedRuns(h, count: 60, sink: "file:" + h.dlq.path)  // 120 records, 60 distinct sends
        let carried = h.dlq.path + ".held", carriedAgain = h.dlq.path + ".held-again"
        defer { for path in [carried, carriedAgain] { try? FileManager.default.removeItem(atPath: path) } }
        // Every send refused: the hub's fault, so the sends are held and nothing is dead-lettered.
        try await h.faults(#"{"status":401}"#)

        let waited = try await h.replay([
            "--from", "file:" + h.dlq.path, "--dlq", "file:" + carried, "--skip-hub-check",
            "--hub-wait", "2", "--concurrency", "4",
        ])
        #expect(waited.status == 1, "\(waited.stderr.suffix(1500))")
        #expect(
            waited.stderr.contains("replay: not sent: held ") && waited.stderr.contains("written to file:\(carried)"),
            "\(waited.stderr.suffix(1500))"
        )
        let firstCarry = try String(contentsOfFile: carried, encoding: .utf8).split(separator: "\n")
        #expect(firstCarry.count >= 60, "\(firstCarry.count) records carried")

        let replay = try h.startReplay([
            "--from", "file:" + carried, "--dlq", "file:" + carriedAgain, "--skip-hub-check", "--hub-wait", "0",
        ])
        let held = await replay.stderr.line { $0.contains("The hub is unavailable") }
        #expect(held != nil, "the replay never reported the hub unavailable")
        replay.process.terminate()
        let stopped = await replay.finish()
        #expect(
            stopped.status == 1 && stopped.stderr.contains("replay: not sent: held "),
            "\(stopped.status): \(stopped.stderr.suffix(1500))"
        )
        #expect(try await h.acceptedSends() == 0)

        try await h.clearFaults()
        let finished = try await h.replay(["--from", "file:" + carriedAgain])
        #expect(finished.status == 0, "\(finished.stderr.suffix(1500))")
        let delivered = try await h.deliveries().map(\.headline)
        #expect(delivered.sorted() == (0..<60).map { "Headline \($0)" }.sorted(), "\(delivered.count) deliveries")
    }
}
