/// Adaptive concurrency: halve on throttling, grow by one per limit's worth of successes.
public struct AIMDLimiter: Sendable, Equatable {
    public let minimum: Int
    public let maximum: Int
    /// Kept fractional so that +1/limit per success adds up to +1 per round.
    private var window: Double
    /// One decrease per round trip: throttles of sends started before it are not counted again.
    private var lastDecreaseAt: Double = -.infinity
    public let cooldownSeconds: Double

    public init(minimum: Int, maximum: Int, cooldownSeconds: Double = 1) {
        self.minimum = max(1, minimum)
        self.maximum = max(self.minimum, maximum)
        window = Double(self.maximum)
        self.cooldownSeconds = cooldownSeconds
    }

    /// Sends allowed in flight now.
    public var limit: Int { Int(window) }

    public mutating func succeeded() {
        window = min(Double(maximum), window + 1 / window)
    }

    /// A 429, a quota 403 or a 503: slow down (at most once per cooldown).
    public mutating func throttled(atSeconds now: Double) {
        guard now - lastDecreaseAt >= cooldownSeconds else { return }
        lastDecreaseAt = now
        window = max(Double(minimum), window / 2)
    }
}
