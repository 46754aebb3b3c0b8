import Foundation
import Kafka
import News
import TestSupport
import Testing

/// Breaking news first and nothing sent too late, with the real binary, dev broker and emulator.
@Suite(.serialized) struct PriorityRunTests {
    @Test func aBreakingItemOvertakesABulkBacklogAtAKnownQuota() async throws {
        let h = try await PipelineHarness(devices: 600)
        // 1,500 bulk Sports items: 75 seconds of sends at 20 a second, so the backlog is still
        // there however long this test's own steps stall (under `make test` they have taken a
        // minute); the run is stopped as soon as the breaking item is delivered.
        let backlog = (0..<1500).map { n in
            (topic: "news.sports", value: #"{"id":"bulk-\#(n)","headline":"Result \#(n)","priority":"bulk"}"#)
        }
        try await h.produce(0..<0, extra: backlog)
        // No idle exit: the run ends by SIGTERM, never before the breaking item is produced. A
        // target for bulk of a millisecond: every bulk send misses it.
        let run = try h.startRun(["--max-rate", "20", "--slo", "bulk=0.001"], exitWhenIdle: nil)
        try await h.waitForDeliveries(20)
        try await h.produce(0..<0, extra: [("news.world", #"{"id":"quake","headline":"Quake","priority":"breaking"}"#)])
        // The broker has acknowledged it: from here on it is there to be read.
        let producedAt = Date().timeIntervalSince1970
        _ = try await poll(every: .milliseconds(20), timeout: .seconds(120)) {
            try await h.deliveries().contains { $0.headline == "Quake" } ? true : nil
        }
        run.process.terminate()
        let finished = await run.finish()
        #expect(finished.status == 0, "\(finished.stderr.suffix(2000))")
        let deliveries = try await h.deliveries()
        let quake = try #require(deliveries.first { $0.headline == "Quake" })
        let bulk = deliveries.filter { $0.headline.hasPrefix("Result") }
        // In arrival order it would have waited for the rest of the backlog (over a thousand
        // sends); first in line it waits for the few sends already started and the next token.
        let between = bulk.count { $0.at > producedAt && $0.at < quake.at }
        #expect(between < 300, "\(between) bulk sends went between its production and its delivery")
        #expect(bulk.count < 1200, "the backlog was still draining when it went: \(bulk.count) of 1,500 sent")
        // Each delivered once, and every one of them committed by the drain (the bulk in order
        // within each partition, whatever went first between partitions).
        #expect(Set(deliveries.map(\.headline)).count == deliveries.count)
        #expect(try await h.committedTotal() == Int64(deliveries.count))
        // Its latency is reported per priority.
        let final = try #require(try PipelineHarness.metricsLines(finished.stdout).last)
        let byPriority = try #require(final["endToEndByPriorityMs"] as? [String: Any])
        #expect(Set(byPriority.keys) == ["breaking", "bulk"])
        let missed = try #require(final["sloMissed"] as? [String: Int])
        #expect(missed["bulk"] == bulk.count, "every bulk send missed its millisecond: \(missed), \(bulk.count) sent")
        #expect(missed["breaking"] == 0 && missed["normal"] == 0, "no target, nothing missed")
        try await PipelineHarness.validateMetrics(finished.stdout)
    }

    @Test func anItemOlderThanTheMaximumAgeIsDeadLetteredAsStaleAndNeverSent() async throws {
        let h = try await PipelineHarness(devices: 600)
        let hourAgo = Int64((Date().timeIntervalSince1970 - 3600) * 1000)
        try await h.produce(
            0..<0,
            extra: [("news.world", #"{"id":"old","headline":"Old news"}"#)],
            timestampMs: hourAgo
        )
        try await h.produce(0..<6)
        let run = try await h.run(["--max-age", "1800"])
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")
        let deliveries = try await h.deliveries()
        #expect(deliveries.count == 6)
        #expect(!deliveries.contains { $0.headline == "Old news" })
        let dead = try h.deadLetters()
        #expect(dead.count == 1)
        #expect(dead.first?["reason"] as? String == "stale")
        #expect(dead.first?["itemId"] as? String == "old")
        let final = try #require(try PipelineHarness.metricsLines(run.stdout).last)
        #expect(final["stale"] as? Int == 1)
        #expect(try await h.committedTotal() == 7)
        // Without a bound, an hour-old item still goes.
        let again = try await PipelineHarness(devices: 600)
        try await again.produce(
            0..<0,
            extra: [("news.world", #"{"id":"old","headline":"Old news"}"#)],
            timestampMs: hourAgo
        )
        let unbounded = try await again.run(["--max-age", "0"])
        #expect(unbounded.status == 0)
        #expect(try await again.deliveries().map(\.headline) == ["Old news"])
    }

    @Test func badPrioritySettingsAreRefusedWithExitTwo() async throws {
        for (flags, message) in [
            (["--category-priority", "Sports=urgent"], "Category=breaking|normal|bulk"),
            (["--category-priority", "Weather=bulk"], "is not one of"),
            (["--max-age", "-5"], "max-age"),
            (["--slo", "breaking=soon"], "--slo: expected breaking|normal|bulk=seconds"),
            (["--slo", "urgent=2"], "--slo: expected"),
        ] {
            let run = try await HubcastBinary.run(
                ["run", "--brokers", "127.0.0.1:9", "--hub", "h"] + flags,
                environment: [
                    "HUBCAST_CONNECTION_STRING": "Endpoint=sb://127.0.0.1:9/;SharedAccessKeyName=a;SharedAccessKey=b"
                ]
            )
            #expect(run.status == 2, "\(flags): \(run.stderr)")
            #expect(run.stderr.contains(message), "\(flags): \(run.stderr)")
        }
        let produce = try await HubcastBinary.run([
            "produce", "--brokers", "127.0.0.1:9", "--file", "/dev/null", "--priority", "breaking",
        ])
        #expect(produce.status == 2)
        #expect(produce.stderr.contains("--priority is for the item built from flags"), "\(produce.stderr)")
    }
}
