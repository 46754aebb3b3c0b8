import Histogram

/// Latencies in microseconds on HdrHistogram: percentiles within 1% (two significant digits), in
/// fixed memory, from 1 µs to an hour (a longer value counts as an hour).
public struct LatencyHistogram: Sendable {
    static let highestMicros: UInt64 = 3_600_000_000
    private var hdr = Histogram<UInt64>(
        lowestDiscernibleValue: 1,
        highestTrackableValue: highestMicros,
        numberOfSignificantValueDigits: .two
    )

    public init() {}

    public var count: UInt64 { hdr.totalCount }
    /// The largest value recorded, exactly (0 when empty).
    public var max: Int64 { count == 0 ? 0 : Int64(hdr.maxRecorded) }

    public mutating func record(_ micros: Int64) {
        hdr.record(Swift.min(UInt64(Swift.max(micros, 0)), Self.highestMicros))
    }

    public mutating func merge(_ other: LatencyHistogram) {
        hdr.add(other.hdr)
    }

    /// The value at quantile `q` (0…1), never above the largest recorded; 0 when empty.
    public func value(atQuantile q: Double) -> Int64 {
        count == 0 ? 0 : Int64(hdr.valueAtPercentile(Swift.min(Swift.max(q, 0), 1) * 100))
    }
}
