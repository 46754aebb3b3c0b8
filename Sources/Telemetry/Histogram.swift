/// A log-linear histogram of non-negative integers (microseconds here): 64 sub-buckets per power of
/// two, so a percentile is within about 1.6% of the true value, in fixed memory.
public struct Histogram: Sendable, Equatable {
    private static let subBits = 6
    private static let subBuckets = 1 << subBits
    private static let bucketCount = 128 + (63 - subBits) * subBuckets
    private var counts = [UInt64](repeating: 0, count: bucketCount)
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

    // Values below 128 are exact; above, a value's top 7 bits pick one of 64 buckets per power of two.
    private static func index(of v: Int64) -> Int {
        if v < 128 { return Int(v) }
        let shift = (63 - v.leadingZeroBitCount) - subBits
        return Swift.min(128 + (shift - 1) * subBuckets + Int(v >> shift) - subBuckets, bucketCount - 1)
    }

    private static func upperBound(of index: Int) -> Int64 {
        if index < 128 { return Int64(index) }
        let shift = (index - 128) / subBuckets + 1
        let mantissa = (index - 128) % subBuckets + subBuckets
        return (Int64(mantissa + 1) << shift) - 1
    }
}
