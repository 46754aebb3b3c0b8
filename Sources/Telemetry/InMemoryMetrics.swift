import CoreMetrics
import Synchronization

/// A swift-metrics back end that keeps every value in memory for a printer to read: counters,
/// meters (gauges) and timers (HDR histograms, per interval and in total).
public final class InMemoryMetrics: MetricsFactory, Sendable {
    /// A metric's identity: its label and dimensions.
    public struct Key: Hashable, Sendable {
        public let label: String
        public let dimensions: [String]

        init(_ label: String, _ dimensions: [(String, String)]) {
            self.label = label
            self.dimensions = dimensions.map { "\($0.0)=\($0.1)" }.sorted()
        }

        /// The value of dimension `name`, if present.
        public func dimension(_ name: String) -> String? {
            dimensions.first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }
        }
    }

    /// Everything recorded, at one instant.
    public struct Snapshot: Sendable {
        public var counters: [Key: Int64] = [:]
        public var meters: [Key: Double] = [:]
        /// Recorded since the previous `snapshot(resettingIntervals: true)`.
        public var intervalTimers: [Key: LatencyHistogram] = [:]
        public var totalTimers: [Key: LatencyHistogram] = [:]

        public func counter(_ label: String) -> Int64 { counters.filter { $0.key.label == label }.values.reduce(0, +) }

        /// Counter `label` summed over the counters whose `dimension` is `value`.
        public func counter(_ label: String, _ dimension: String, _ value: String) -> Int64 {
            counters.filter { $0.key.label == label && $0.key.dimension(dimension) == value }.values.reduce(0, +)
        }

        /// The histograms of timer `label` merged per value of `dimension` (every other dimension
        /// summed over), from `timers` (`intervalTimers` or `totalTimers`).
        public static func merged(
            _ timers: [Key: LatencyHistogram],
            label: String,
            by dimension: String
        ) -> [String: LatencyHistogram] {
            var merged: [String: LatencyHistogram] = [:]
            for (key, histogram) in timers where key.label == label {
                guard let value = key.dimension(dimension) else { continue }
                merged[value, default: LatencyHistogram()].merge(histogram)
            }
            return merged
        }
        public func meter(_ label: String) -> Double { meters.filter { $0.key.label == label }.values.reduce(0, +) }

        /// Meter `label` summed over the meters whose `dimension` is `value`.
        public func meter(_ label: String, _ dimension: String, _ value: String) -> Double {
            meters.filter { $0.key.label == label && $0.key.dimension(dimension) == value }.values.reduce(0, +)
        }
    }

    private let counters = Mutex<[Key: CounterBox]>([:])
    private let meters = Mutex<[Key: MeterBox]>([:])
    private let timers = Mutex<[Key: TimerBox]>([:])

    public init() {}

    public func snapshot(resettingIntervals: Bool) -> Snapshot {
        var s = Snapshot()
        for (key, box) in counters.withLock({ $0 }) { s.counters[key] = box.value }
        for (key, box) in meters.withLock({ $0 }) { s.meters[key] = box.value }
        for (key, box) in timers.withLock({ $0 }) {
            let (interval, total) = box.read(reset: resettingIntervals)
            s.intervalTimers[key] = interval
            s.totalTimers[key] = total
        }
        return s
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> CounterHandler {
        counters.withLock { Self.entry(&$0, Key(label, dimensions), CounterBox.init) }
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> FloatingPointCounterHandler {
        meters.withLock { Self.entry(&$0, Key(label, dimensions), MeterBox.init) }
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> MeterHandler {
        meters.withLock { Self.entry(&$0, Key(label, dimensions), MeterBox.init) }
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> RecorderHandler {
        meters.withLock { Self.entry(&$0, Key(label, dimensions), MeterBox.init) }
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> TimerHandler {
        timers.withLock { Self.entry(&$0, Key(label, dimensions), TimerBox.init) }
    }

    /// The registered handler for `key`, created and stored on first use.
    private static func entry<Box>(_ registry: inout [Key: Box], _ key: Key, _ make: () -> Box) -> Box {
        if let existing = registry[key] { return existing }
        let box = make()
        registry[key] = box
        return box
    }

    public func destroyCounter(_ handler: CounterHandler) {}
    public func destroyMeter(_ handler: MeterHandler) {}
    public func destroyFloatingPointCounter(_ handler: FloatingPointCounterHandler) {}
    public func destroyRecorder(_ handler: RecorderHandler) {}
    public func destroyTimer(_ handler: TimerHandler) {}
}

final class CounterBox: CounterHandler, Sendable {
    private let atomic = Atomic<Int64>(0)
    var value: Int64 { atomic.load(ordering: .relaxed) }
    func increment(by amount: Int64) { atomic.add(amount, ordering: .relaxed) }
    func reset() { atomic.store(0, ordering: .relaxed) }
}

final class MeterBox: MeterHandler, RecorderHandler, FloatingPointCounterHandler, Sendable {
    private let bits = Atomic<UInt64>(0)
    var value: Double { Double(bitPattern: bits.load(ordering: .relaxed)) }
    func set(_ value: Int64) { set(Double(value)) }
    func set(_ value: Double) { bits.store(value.bitPattern, ordering: .relaxed) }
    func record(_ value: Int64) { set(Double(value)) }
    func record(_ value: Double) { set(value) }
    func increment(by amount: Double) {
        var current = bits.load(ordering: .relaxed)
        while true {
            let next = (Double(bitPattern: current) + amount).bitPattern
            let (exchanged, original) = bits.compareExchange(expected: current, desired: next, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }
    func decrement(by amount: Double) { increment(by: -amount) }
    func reset() { set(0.0) }
}

/// Durations in microseconds. A sample goes into the interval's histogram only; the interval is
/// folded into the total when it is read, so recording costs one histogram update, not two.
final class TimerBox: TimerHandler, Sendable {
    private let histograms = Mutex((interval: LatencyHistogram(), total: LatencyHistogram()))

    func recordNanoseconds(_ duration: Int64) {
        let micros = duration / 1000
        histograms.withLock { $0.interval.record(micros) }
    }

    func read(reset: Bool) -> (LatencyHistogram, LatencyHistogram) {
        histograms.withLock { h in
            var total = h.total
            total.merge(h.interval)
            let interval = h.interval
            if reset {
                h.total = total
                h.interval = LatencyHistogram()
            }
            return (interval, total)
        }
    }
}
