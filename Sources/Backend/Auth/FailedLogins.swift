import Synchronization

/// Where failed logins are counted: in this process (`LoginThrottle` behind a lock), or in the
/// store that several instances share, so that N instances give a guesser no more tries than one.
public protocol FailedLogins: Sendable {
    func decide(_ keys: [LoginThrottle.Key], now: Double) async -> LoginThrottle.Decision
    func recordFailure(_ keys: [LoginThrottle.Key], now: Double) async
    func recordSuccess(user: String) async
}

/// Counted in this process: for one instance (SQLite), and as the fallback of a shared store that
/// cannot be reached.
public final class LocalFailedLogins: FailedLogins {
    private let throttle: Mutex<LoginThrottle>

    public init(_ throttle: LoginThrottle = LoginThrottle()) {
        self.throttle = Mutex(throttle)
    }

    public func decide(_ keys: [LoginThrottle.Key], now: Double) -> LoginThrottle.Decision {
        throttle.withLock { $0.decide(keys, now: now) }
    }

    public func recordFailure(_ keys: [LoginThrottle.Key], now: Double) {
        throttle.withLock { $0.recordFailure(keys, now: now) }
    }

    public func recordSuccess(user: String) {
        throttle.withLock { $0.recordSuccess(user: user) }
    }
}

extension LoginThrottle.Key {
    /// The key as a shared store keeps it.
    var storeKey: String {
        switch self {
        case .user(let name): "user:" + name
        case .address(let address): "address:" + address
        }
    }
}
