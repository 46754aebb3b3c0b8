/// A log-linear histogram of non-negative integers (microseconds here): 64 sub-buckets per power of
/// two, so a percentile is within about 1.6% of the true value, in fixed memory.
public struct Histogram: Sendable, Equatable {
    private static let subBuckets = 64
    private var counts = [UInt64](repeating: 0, count: 64 * 58)
    public private(set) var count: UInt64 = 0
    public private(set) var max: Int64 = 0

    public init() {}

    public mutating func record(_ value: Int64) {
        let v = Swift.max(0, value)
        counts[Self.index(of: v)] += 1
        count += 1
        if v > max { max = v }
    }

    public mutating func merge(_ other: Histogram) {
        for i in counts.indices { counts[i] += other.counts[i] }
        count += other.count
        max = Swift.max(max, other.max)
    }

    /// The value at quantile `q` (0…1), as the upper bound of its bucket; 0 when empty.
    public func value(atQuantile q: Double) -> Int64 {
        guard count > 0 else { return 0 }
        let rank = UInt64((Double(count) * Swift.min(Swift.max(q, 0), 1)).rounded(.up))
        var seen: UInt64 = 0
        for (i, c) in counts.enumerated() where c > 0 {
            seen += c
            if seen >= Swift.max(rank, 1) { return Swift.min(Self.upperBound(of: i), max) }
        }
        return max
    }

    private static func index(of v: Int64) -> Int {
        if v < Int64(subBuckets) { return Int(v) }
        let exponent = 63 - v.leadingZeroBitCount - 5
        let mantissa = Int(v >> exponent) - subBuckets / 2 * 2 / 2
        return Swift.min(exponent * (subBuckets / 2) + mantissa + subBuckets / 2, 64 * 58 - 1)
    }

    private static func upperBound(of index: Int) -> Int64 {
        if index < subBuckets { return Int64(index) }
        let half = subBuckets / 2
        let exponent = (index - half) / half
        let mantissa = (index - half) % half + half
        return (Int64(mantissa + 1) << exponent) - 1
    }
}
