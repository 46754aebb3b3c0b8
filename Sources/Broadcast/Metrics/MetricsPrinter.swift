import Foundation
import Kafka
import News
import NotificationHubs
import ServiceLifecycle
import Telemetry
import TextFormats

/// Prints the pipeline's metrics as one JSON object per line on stdout, every interval and once
/// more at shutdown (schemas/metrics.schema.json).
public struct MetricsPrinter: Service {
    let metrics: InMemoryMetrics
    let interval: Duration
    /// The hubs' names when the pipeline sends to several: each line then has a `hubs` object.
    let hubs: [String]
    let write: @Sendable ([UInt8]) -> Void

    public init(
        metrics: InMemoryMetrics,
        interval: Duration,
        hubs: [String] = [],
        write: @escaping @Sendable ([UInt8]) -> Void = { FileHandle.standardOutput.write(Data($0 + [0x0A])) }
    ) {
        self.metrics = metrics
        self.interval = interval
        self.hubs = hubs
        self.write = write
    }

    public func run() async throws {
        var previous = metrics.snapshot(resettingIntervals: false)
        var previousAt = ContinuousClock.now
        // Periodic lines until shutdown; the final line (totals) is `printFinal`, after the pipeline drained.
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                break
            }
            let now = ContinuousClock.now
            let snapshot = metrics.snapshot(resettingIntervals: true)
            write(Self.line(snapshot, previous: previous, elapsed: now - previousAt, final: false, hubs: hubs))
            previous = snapshot
            previousAt = now
        }
    }

    /// The final line: totals over the whole run, with the latency of the whole run.
    public func printFinal(elapsed: Duration) {
        write(
            Self.line(
                metrics.snapshot(resettingIntervals: false),
                previous: nil,
                elapsed: elapsed,
                final: true,
                hubs: hubs
            )
        )
    }

    static func line(
        _ s: InMemoryMetrics.Snapshot,
        previous: InMemoryMetrics.Snapshot?,
        elapsed: Duration,
        final: Bool,
        hubs: [String] = []
    ) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 512)
        w.beginObject()
        w.member("ts", CivilDate.rfc3339(epochSeconds: Date().timeIntervalSince1970))
        for (field, label) in [
            ("consumed", "consumed"), ("sent", "sent"), ("scheduled", "scheduled"), ("failed", "failed"),
            ("retried", "retried"),
            ("throttled", "throttled"), ("deadLettered", "dead_lettered"), ("invalid", "invalid"),
            ("expired", "expired"), ("stale", "stale"), ("duplicates", "duplicates"),
            ("deduplicated", "deduplicated"),
        ] {
            w.key(field)
            w.number(s.counter(PipelineMetrics.prefix + label))
        }
        let native = NativePlatform.allCases.map { ($0.rawValue, s.counter("hubcast_sent", "platform", $0.rawValue)) }
        // Only once a native send was made: most runs send templates alone.
        if native.contains(where: { $0.1 > 0 }) {
            w.key("sentByPlatform")
            w.beginObject()
            w.key("template")
            w.number(s.counter("hubcast_sent") - native.reduce(0) { $0 + $1.1 })
            for (name, count) in native {
                w.key(name)
                w.number(count)
            }
            w.endObject()
        }
        w.key("inFlight")
        w.number(Int64(s.meter("hubcast_in_flight")))
        w.key("concurrency")
        w.number(Int64(s.meter("hubcast_concurrency")))
        let seconds = max(elapsed.inSeconds, 0.001)
        let sentNow = s.counter("hubcast_sent") - (previous?.counter("hubcast_sent") ?? 0)
        w.key("sendsPerSec")
        w.number(Double(sentNow) / seconds, decimals: 1)
        let timers = final ? s.totalTimers : s.intervalTimers
        let send = timers.filter { $0.key.label == "hubcast_send_latency" }.values.reduce(into: LatencyHistogram()) {
            $0.merge($1)
        }
        w.key("latencyMs")
        writeLatency(send, into: &w)
        w.key("endToEndMs")
        w.beginObject()
        for (category, histogram) in InMemoryMetrics.Snapshot.merged(
            timers,
            label: PipelineMetrics.endToEndLabel,
            by: "category"
        ).sorted(by: { $0.key < $1.key })
        where histogram.count > 0 {
            w.key(category)
            writeLatency(histogram, into: &w)
        }
        w.endObject()
        w.key("endToEndByPriorityMs")
        w.beginObject()
        let byPriority = InMemoryMetrics.Snapshot.merged(timers, label: PipelineMetrics.endToEndLabel, by: "priority")
        for priority in Priority.mostUrgentFirst {
            guard let histogram = byPriority[priority.name], histogram.count > 0 else { continue }
            w.key(priority.name)
            writeLatency(histogram, into: &w)
        }
        w.endObject()
        w.key("sloMissed")
        w.beginObject()
        for priority in Priority.mostUrgentFirst {
            w.key(priority.name)
            w.number(s.counter("hubcast_slo_missed", "priority", priority.name))
        }
        w.endObject()
        w.key("lag")
        w.number(Int64(s.meter("hubcast_lag")))
        w.key("paceRate")
        let paceRate = s.meter("hubcast_pace_rate")
        if paceRate > 0 { w.number(paceRate, decimals: 1) } else { w.null() }
        w.key("paceHubRate")
        let hubRate = s.meter("hubcast_pace_hub_rate")
        if hubRate > 0 { w.number(hubRate, decimals: 1) } else { w.null() }
        // Several hubs: the rates are every hub's together, the share the smallest, the peers the most.
        w.key("paceShare")
        w.number(
            hubs.isEmpty
                ? s.meter("hubcast_pace_share") : hubs.map { s.meter("hubcast_pace_share", "hub", $0) }.min() ?? 1,
            decimals: 3
        )
        w.key("paceDemand")
        w.number(s.meter("hubcast_pace_demand"), decimals: 1)
        w.key("quotaPeers")
        w.number(
            Int64(
                hubs.isEmpty
                    ? s.meter("hubcast_quota_peers") : hubs.map { s.meter("hubcast_quota_peers", "hub", $0) }.max() ?? 0
            )
        )
        w.key("hubAvailable")
        // Every hub's gauge is 1 while it is available.
        w.bool(s.meter("hubcast_hub_available") >= Double(max(1, hubs.count)))
        w.key("sasTokensMinted")
        w.number(Int64(s.meter("hubcast_sas_tokens_minted")))
        if !hubs.isEmpty { writeHubs(hubs, s, into: &w) }
        if final {
            w.key("final")
            w.bool(true)
        }
        w.endObject()
        return w.bytes
    }

    /// Each hub's own figures: `"hubs": {"<name>": {"sent": …, …}}`.
    private static func writeHubs(_ hubs: [String], _ s: InMemoryMetrics.Snapshot, into w: inout JSONWriter) {
        w.key("hubs")
        w.beginObject()
        for hub in hubs {
            w.key(hub)
            w.beginObject()
            for (field, label) in [
                ("sent", "sent"), ("scheduled", "scheduled"), ("failed", "failed"), ("retried", "retried"),
                ("throttled", "throttled"),
            ] {
                w.key(field)
                w.number(s.counter(PipelineMetrics.prefix + label, "hub", hub))
            }
            w.key("available")
            w.bool(s.meter("hubcast_hub_available", "hub", hub) != 0)
            w.key("paceRate")
            let rate = s.meter("hubcast_pace_rate", "hub", hub)
            if rate > 0 { w.number(rate, decimals: 1) } else { w.null() }
            w.key("paceShare")
            w.number(s.meter("hubcast_pace_share", "hub", hub), decimals: 3)
            w.endObject()
        }
        w.endObject()
    }

    private static func writeLatency(_ h: LatencyHistogram, into w: inout JSONWriter) {
        w.beginObject()
        for (name, q) in [("p50", 0.5), ("p99", 0.99)] {
            w.key(name)
            w.number(Double(h.value(atQuantile: q)) / 1000, decimals: 2)
        }
        w.key("max")
        w.number(Double(h.max) / 1000, decimals: 2)
        w.endObject()
    }
}
