import CoreMetrics
import Telemetry
import Testing

@Suite struct TelemetryTests {
    @Test func histogramPercentilesAreWithinTwoPercent() {
        var h = Histogram()
        for v in 1...10_000 { h.record(Int64(v)) }
        let p50 = Double(h.value(atQuantile: 0.5)), p99 = Double(h.value(atQuantile: 0.99))
        #expect(abs(p50 - 5000) / 5000 < 0.02, "\(p50)")
        #expect(abs(p99 - 9900) / 9900 < 0.02, "\(p99)")
        #expect(h.max == 10_000 && h.count == 10_000)
        #expect(Histogram().value(atQuantile: 0.5) == 0)
    }

    @Test func handlersAreSharedPerLabelAndRenderForPrometheus() {
        let metrics = InMemoryMetrics()
        metrics.makeCounter(label: "hubcast_sent", dimensions: []).increment(by: 2)
        metrics.makeCounter(label: "hubcast_sent", dimensions: []).increment(by: 3)
        metrics.makeMeter(label: "hubcast_in_flight", dimensions: []).set(7.0)
        metrics.makeTimer(label: "hubcast_end_to_end_latency", dimensions: [("category", "World")]).recordNanoseconds(2_000_000)
        let snapshot = metrics.snapshot(resettingIntervals: true)
        #expect(snapshot.counter("hubcast_sent") == 5)
        #expect(snapshot.meter("hubcast_in_flight") == 7)
        #expect(metrics.snapshot(resettingIntervals: false).intervalTimers.values.allSatisfy { $0.count == 0 })
        let text = PrometheusText.render(snapshot)
        #expect(text.contains("# TYPE hubcast_sent counter\nhubcast_sent 5\n"))
        #expect(text.contains("hubcast_in_flight 7.0\n"))
        #expect(text.contains(#"hubcast_end_to_end_latency_seconds{category="World",quantile="0.5"} 0.002"#))
        #expect(text.contains(#"hubcast_end_to_end_latency_seconds_count{category="World"} 1"#))
    }
}
