/// Failed logins per key (a user name, a client address): after `maxFailures` within `window`
/// seconds the key is locked for `lockout` seconds, and every attempt meanwhile is refused before
/// any password is checked. A value with an injected clock; the caller holds it behind a lock.
public struct LoginThrottle: Sendable {
    public struct Limits: Sendable {
        public var maxFailures: Int
        public var window: Double
        public var lockout: Double
        public init(maxFailures: Int, window: Double = 300, lockout: Double = 300) {
            self.maxFailures = maxFailures
            self.window = window
            self.lockout = lockout
        }
    }

    public enum Key: Hashable, Sendable {
        case user(String)
        case address(String)
    }

    public enum Decision: Equatable, Sendable {
        case allowed
        /// Whole seconds until the lock ends (for `Retry-After`).
        case locked(retryAfter: Int)
    }

    struct Counter {
        var windowStart: Double
        var failures: Int
        var lockedUntil: Double
    }

    let perUser: Limits
    let perAddress: Limits
    /// Bounds memory under a flood of made-up names: beyond it, stale counters are dropped.
    let maxKeys: Int
    private(set) var counters: [Key: Counter] = [:]

    public init(
        perUser: Limits = Limits(maxFailures: 10),
        perAddress: Limits = Limits(maxFailures: 50),
        maxKeys: Int = 100_000
    ) {
        self.perUser = perUser
        self.perAddress = perAddress
        self.maxKeys = maxKeys
    }

    /// Whether an attempt for these keys may be checked at all.
    public func decide(_ keys: [Key], now: Double) -> Decision {
        var wait = 0.0
        for key in keys {
            if let counter = counters[key], counter.lockedUntil > now { wait = max(wait, counter.lockedUntil - now) }
        }
        return wait > 0 ? .locked(retryAfter: Int(wait.rounded(.up))) : .allowed
    }

    public mutating func recordFailure(_ keys: [Key], now: Double) {
        if counters.count >= maxKeys { prune(now: now) }
        for key in keys {
            let limits = limits(for: key)
            var counter = counters[key] ?? Counter(windowStart: now, failures: 0, lockedUntil: 0)
            if now - counter.windowStart > limits.window {
                counter.windowStart = now
                counter.failures = 0
            }
            counter.failures += 1
            if counter.failures >= limits.maxFailures { counter.lockedUntil = now + limits.lockout }
            counters[key] = counter
        }
    }

    /// A correct password clears the user's count (not the address's: one address may try many users).
    public mutating func recordSuccess(user: String) {
        counters[.user(user)] = nil
    }

    private func limits(for key: Key) -> Limits {
        switch key {
        case .user: perUser
        case .address: perAddress
        }
    }

    private mutating func prune(now: Double) {
        counters = counters.filter { key, counter in
            counter.lockedUntil > now || now - counter.windowStart <= limits(for: key).window
        }
        // Still full of live counters (a flood): forget the oldest half rather than grow without bound.
        if counters.count >= maxKeys {
            let keep = counters.sorted { $0.value.windowStart > $1.value.windowStart }.prefix(maxKeys / 2)
            counters = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
        }
    }
}
