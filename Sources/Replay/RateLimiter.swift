/// A token bucket: at most `rate` sends per second on average, bursts of at most one second's worth.
public struct RateLimiter: Sendable {
    public let rate: Double
    private var tokens: Double
    private var last: Double

    public init(rate: Double, now: Double) {
        self.rate = rate
        tokens = 1
        last = now
    }

    /// Takes one token; returns how long to wait first (zero when one is available).
    public mutating func reserve(now: Double) -> Double {
        tokens = min(max(rate, 1), tokens + (now - last) * rate)
        last = now
        tokens -= 1
        return tokens >= 0 ? 0 : -tokens / rate
    }
}
