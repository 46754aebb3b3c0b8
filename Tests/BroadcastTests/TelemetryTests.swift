import CoreMetrics
import Telemetry
import Testing

@Suite struct TelemetryTests {
    @Test func latencyPercentilesAreWithinOnePercent() {
        var h = LatencyHistogram()
        for v in 1...10_000 { h.record(Int64(v)) }
        let p50 = Double(h.value(atQuantile: 0.5)), p99 = Double(h.value(atQuantile: 0.99))
        #expect(abs(p50 - 5000) / 5000 < 0.01, "\(p50)")
        #expect(abs(p99 - 9900) / 9900 < 0.01, "\(p99)")
        #expect(h.max == 10_000 && h.count == 10_000)
        #expect(LatencyHistogram().value(atQuantile: 0.5) == 0 && LatencyHistogram().max == 0)
    }

    @Test func latencyHistogramsMergeAndKeepOutOfRangeValues() {
        var a = LatencyHistogram(), b = LatencyHistogram()
        a.record(-5)
        b.record(10_000_000_000)
        a.merge(b)
        #expect(a.count == 2)
        #expect(a.value(atQuantile: 0) == 0)
        #expect(a.max == 3_600_000_000, "longer than an hour counts as an hour")
    }

    @Test func handlersAreSharedPerLabelAndIntervalsReset() {
        let metrics = InMemoryMetrics()
        metrics.makeCounter(label: "hubcast_sent", dimensions: []).increment(by: 2)
        metrics.makeCounter(label: "hubcast_sent", dimensions: []).increment(by: 3)
        metrics.makeMeter(label: "hubcast_in_flight", dimensions: []).set(7.0)
        metrics.makeTimer(label: "hubcast_end_to_end_latency", dimensions: [("category", "World")]).recordNanoseconds(
            2_000_000
        )
        let snapshot = metrics.snapshot(resettingIntervals: true)
        #expect(snapshot.counter("hubcast_sent") == 5)
        #expect(snapshot.meter("hubcast_in_flight") == 7)
        #expect(snapshot.intervalTimers.values.map(\.count) == [1])
        #expect(snapshot.intervalTimers.values.first?.value(atQuantile: 0.5) == 2000)
        let after = metrics.snapshot(resettingIntervals: false)
        #expect(after.intervalTimers.values.allSatisfy { $0.count == 0 })
        #expect(after.totalTimers.values.map(\.count) == [1])
    }

    @Test func prometheusGetsCountersGaugesAndLatencyHistogramsInSeconds() {
        let prometheus = PrometheusMetrics()
        let factory = prometheus.factory
        factory.makeCounter(label: "hubcast_sent", dimensions: []).increment(by: 5)
        factory.makeMeter(label: "hubcast_in_flight", dimensions: []).set(7.0)
        factory.makeTimer(label: "hubcast_send_latency", dimensions: []).recordNanoseconds(3_000_000)
        factory.makeTimer(label: "hubcast_end_to_end_latency", dimensions: [("category", "World")]).recordNanoseconds(
            40_000_000
        )
        let text = String(decoding: prometheus.exposition(), as: UTF8.self)
        #expect(text.contains("# TYPE hubcast_sent counter\nhubcast_sent 5\n"), "\(text)")
        #expect(text.contains("# TYPE hubcast_in_flight gauge\nhubcast_in_flight 7.0\n"), "\(text)")
        #expect(text.contains("# TYPE hubcast_send_latency_seconds histogram\n"), "\(text)")
        // 3 ms: above the 2.5 ms bucket, in the 5 ms one and every one after.
        #expect(text.contains(#"hubcast_send_latency_seconds_bucket{le="0.0025"} 0"#), "\(text)")
        #expect(text.contains(#"hubcast_send_latency_seconds_bucket{le="0.005"} 1"#), "\(text)")
        #expect(text.contains(#"hubcast_send_latency_seconds_bucket{le="+Inf"} 1"#), "\(text)")
        #expect(text.contains(#"hubcast_end_to_end_latency_seconds_bucket{category="World",le="0.05"} 1"#), "\(text)")
        #expect(text.contains(#"hubcast_end_to_end_latency_seconds_bucket{category="World",le="300.0"} 1"#), "\(text)")
        #expect(text.contains(#"hubcast_end_to_end_latency_seconds_count{category="World"} 1"#), "\(text)")
    }
}

/// End-to-end latency is recorded once per send, per (priority, category), and read both ways.
@Suite struct EndToEndViewTests {
    @Test func oneTimerPerPriorityAndCategoryMergesIntoEachView() {
        let metrics = InMemoryMetrics()
        let key = { (category: String, priority: String) in [("category", category), ("priority", priority)] }
        metrics.makeTimer(label: "hubcast_end_to_end_latency", dimensions: key("World", "breaking")).recordNanoseconds(
            1_000_000
        )
        metrics.makeTimer(label: "hubcast_end_to_end_latency", dimensions: key("World", "bulk")).recordNanoseconds(
            9_000_000
        )
        metrics.makeTimer(label: "hubcast_end_to_end_latency", dimensions: key("Sports", "bulk")).recordNanoseconds(
            5_000_000
        )
        metrics.makeTimer(label: "hubcast_send_latency", dimensions: [("category", "World")]).recordNanoseconds(
            7_000_000
        )
        let timers = metrics.snapshot(resettingIntervals: false).totalTimers
        let byCategory = InMemoryMetrics.Snapshot.merged(timers, label: "hubcast_end_to_end_latency", by: "category")
        #expect(byCategory.mapValues(\.count) == ["World": 2, "Sports": 1])
        #expect(byCategory["World"]?.max == 9000)
        let byPriority = InMemoryMetrics.Snapshot.merged(timers, label: "hubcast_end_to_end_latency", by: "priority")
        #expect(byPriority.mapValues(\.count) == ["breaking": 1, "bulk": 2])
        #expect(byPriority["bulk"].map { $0.value(atQuantile: 0) } == 5000)
    }
}
