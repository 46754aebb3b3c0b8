import CoreMetrics
import Prometheus

/// The metrics for Prometheus: swift-prometheus's registry, fed through swift-metrics beside
/// `InMemoryMetrics` (which the stdout lines read), exposed on `/metrics`.
///
/// Counters and meters keep their labels; the latency timers become histograms in seconds with
/// fixed buckets, so quantiles can be aggregated across instances (a summary's cannot).
public struct PrometheusMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()

    /// Timer labels and their Prometheus names and bucket bounds, in seconds.
    /// For waits that may last a hub outage or a backlog: minutes are possible.
    static let longWaitBuckets: [Double] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300]

    static let histograms: [String: (name: String, buckets: [Double])] = [
        "hubcast_send_latency": (
            "hubcast_send_latency_seconds",
            [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
        ),
        "hubcast_end_to_end_latency": ("hubcast_end_to_end_latency_seconds", longWaitBuckets),
        "hubcast_backend_store_ping": (
            "hubcast_backend_store_ping_seconds", [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]
        ),
        // A canary takes up to its interval, which may be minutes.
        "hubcast_canary_e2e": ("hubcast_canary_e2e_seconds", longWaitBuckets),
    ]

    public init() {}

    /// The swift-metrics back end that records into `registry`.
    public var factory: any MetricsFactory {
        SecondsTimerFactory(base: PrometheusMetricsFactory(registry: registry))
    }

    /// The text exposition format (version 0.0.4).
    public func exposition() -> [UInt8] {
        registry.emitToBuffer()
    }
}

/// swift-prometheus's factory, except that the latency timers record into histograms of seconds as
/// `Double`: its own timers compare `Duration`s, a runtime call per bucket on every sample
/// (measured with callgrind: about 350 more instructions per sample).
struct SecondsTimerFactory: MetricsFactory {
    let base: PrometheusMetricsFactory

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        guard let histogram = PrometheusMetrics.histograms[label] else {
            return base.makeTimer(label: label, dimensions: dimensions)
        }
        return SecondsTimer(
            histogram: base.registry.makeValueHistogram(
                name: histogram.name,
                labels: dimensions,
                buckets: histogram.buckets
            )
        )
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        base.makeCounter(label: label, dimensions: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        base.makeFloatingPointCounter(label: label, dimensions: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        base.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        base.makeMeter(label: label, dimensions: dimensions)
    }

    func destroyCounter(_ handler: any CounterHandler) { base.destroyCounter(handler) }
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        base.destroyFloatingPointCounter(handler)
    }
    func destroyRecorder(_ handler: any RecorderHandler) { base.destroyRecorder(handler) }
    func destroyMeter(_ handler: any MeterHandler) { base.destroyMeter(handler) }
    func destroyTimer(_ handler: any TimerHandler) {
        if let timer = handler as? SecondsTimer {
            base.registry.unregisterValueHistogram(timer.histogram)
        } else {
            base.destroyTimer(handler)
        }
    }
}

final class SecondsTimer: TimerHandler, Sendable {
    let histogram: ValueHistogram

    init(histogram: ValueHistogram) {
        self.histogram = histogram
    }

    func recordNanoseconds(_ duration: Int64) {
        histogram.record(Double(duration) / 1_000_000_000)
    }
}
