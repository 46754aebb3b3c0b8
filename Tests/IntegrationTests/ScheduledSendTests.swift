import Foundation
import TestSupport
import Testing
import TextFormats

/// Items with a `sendAt` on the real binary: `hubcast run` schedules them at the emulator, which
/// delivers them at their time; `hubcast cancel-scheduled` cancels one; too far ahead is invalid.
@Suite(.serialized) struct ScheduledSendTests {
    static func scheduledLine(_ text: String, item: String) -> [String: Any]? {
        let json = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        guard let line = json?["scheduled"] as? [String: Any], line["itemId"] as? String == item else { return nil }
        return line
    }

    @Test func anItemForLaterIsDeliveredAtItsTimeAndOneCancelledIsNot() async throws {
        let h = try await PipelineHarness(devices: 20, partitions: 1)
        let run = try h.startRun([], exitWhenIdle: nil)
        defer { if run.process.isRunning { run.process.terminate() } }
        // The run owns the partition once a first item went through: what follows is consumed at once.
        try await h.produce(0..<1)
        try await h.waitForDeliveries(1)

        // Far enough ahead to be consumed before its time, or it is sent at once and not scheduled:
        // alone this takes about a second, in full test runs on 2 cores it was seen to take 6 s and
        // 22 s. Whole milliseconds, as `sendAt` carries it: the emulator is due at that instant.
        let soon = ((Date().timeIntervalSince1970 + 90) * 1000).rounded(.down) / 1000
        let at = { (t: Double) in CivilDate.rfc3339(epochSeconds: t, milliseconds: true) }
        try await h.produce(
            0..<0,
            extra: [
                ("news.world", #"{"id":"soon-1","headline":"Polls close","sendAt":"\#(at(soon))"}"#),
                (
                    "news.world",
                    #"{"id":"later-2","headline":"Results","sendAt":"\#(at(Date().timeIntervalSince1970 + 7_200))","platforms":["apple"]}"#
                ),
                (
                    "news.world",
                    #"{"id":"far-3","headline":"Next year","sendAt":"\#(at(Date().timeIntervalSince1970 + 8 * 86_400))"}"#
                ),
            ]
        )
        // Each scheduled send's id is printed on stdout.
        let soonLine = await run.stdout.line(timeout: .seconds(60)) { Self.scheduledLine($0, item: "soon-1") != nil }
        let laterLine = await run.stdout.line(timeout: .seconds(60)) { Self.scheduledLine($0, item: "later-2") != nil }
        let soonID = try #require(
            soonLine.flatMap { Self.scheduledLine($0, item: "soon-1") }?["id"] as? String,
            "\(run.stdout.text.suffix(3000))\n\(run.stderr.text.suffix(3000))"
        )
        let later = try #require(laterLine.flatMap { Self.scheduledLine($0, item: "later-2") })
        #expect(later["platform"] as? String == "apple" && later["audience"] as? String == "World", "\(later)")
        let laterID = try #require(later["id"] as? String)

        // Delivered by the emulator within a second of its time, not before.
        let delivered = try await poll(every: .milliseconds(50), timeout: .seconds(180)) {
            try await h.deliveryRecords().first { $0["scheduledId"] as? String == soonID }
        }
        let deliveredAt = try #require(delivered?["at"] as? Double)
        #expect(deliveredAt >= soon && deliveredAt < soon + 1, "due \(soon), delivered \(deliveredAt)")

        // Two hours ahead: cancelled, once.
        let cancel = try await HubcastBinary.run(
            ["cancel-scheduled", "--hub", PipelineHarness.hub, laterID],
            environment: h.environment
        )
        #expect(cancel.status == 0 && cancel.stdout == "cancelled \(laterID)\n", "\(cancel.stderr)")
        let again = try await HubcastBinary.run(
            ["cancel-scheduled", "--hub", PipelineHarness.hub, laterID],
            environment: h.environment
        )
        #expect(
            again.status == 1 && again.stderr.contains("has no scheduled notification \(laterID)"),
            "\(again.stderr)"
        )
        let bad = try await HubcastBinary.run(
            ["cancel-scheduled", "--hub", PipelineHarness.hub, "../messages"],
            environment: h.environment
        )
        #expect(bad.status == 2, "\(bad.stderr)")

        run.process.terminate()
        let finished = await run.finish()
        #expect(finished.status == 0, "\(finished.stderr.suffix(2000))")
        // Eight days ahead: dead-lettered as invalid, naming the field; nothing else was.
        let dead = try h.deadLetters()
        #expect(dead.count == 1 && dead.first?["itemId"] as? String == "far-3", "\(dead)")
        #expect((dead.first?["error"] as? String ?? "").hasPrefix(#"field "sendAt" is 8.0 days ahead"#), "\(dead)")
        let lines = finished.stdout.split(separator: "\n").map(String.init)
        let scheduledLines = lines.filter { $0.contains(#""scheduled":{"#) }
        let metrics = lines.filter { !$0.contains(#""scheduled":{"#) }.joined(separator: "\n")
        #expect(scheduledLines.count == 2)
        let last = try PipelineHarness.metricsLines(metrics).last ?? [:]
        #expect(last["scheduled"] as? Int == 2 && last["sent"] as? Int == 3, "\(last)")
        try await PipelineHarness.validateMetrics(metrics)
        try await PipelineHarness.validateMetrics(
            scheduledLines.joined(separator: "\n"),
            schema: "scheduled.schema.json"
        )
    }
}
