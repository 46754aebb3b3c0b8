import Logging
import PostgresNIO

/// Failed logins counted in PostgreSQL, shared by every backend on the database: each failure is
/// one atomic upsert per key (window, count and lockout decided by the database on the row it
/// holds), so instances together allow exactly the limits one would. If the database cannot be
/// reached the count goes on in this process (`fallback`): the limits still hold per instance.
public final class PostgresFailedLogins: FailedLogins {
    let store: PostgresStore
    let fallback: LocalFailedLogins
    let logger: Logger
    let limits: (perUser: LoginThrottle.Limits, perAddress: LoginThrottle.Limits)

    public init(store: PostgresStore, throttle: LoginThrottle, logger: Logger) {
        self.store = store
        fallback = LocalFailedLogins(throttle)
        limits = (throttle.perUser, throttle.perAddress)
        self.logger = logger
    }

    public func decide(_ keys: [LoginThrottle.Key], now: Double) async -> LoginThrottle.Decision {
        do {
            var wait = 0.0
            let rows = try await store.client.query(
                """
                SELECT locked_until FROM login_failures WHERE key = ANY(\(keys.map(\.storeKey))) AND locked_until > \(now)
                """,
                logger: logger
            )
            for try await lockedUntil in rows.decode(Double.self) { wait = max(wait, lockedUntil - now) }
            return wait > 0 ? .locked(retryAfter: Int(wait.rounded(.up))) : .allowed
        } catch {
            logger.warning("Failed logins: the shared count could not be read; counting in this process")
            return fallback.decide(keys, now: now)
        }
    }

    public func recordFailure(_ keys: [LoginThrottle.Key], now: Double) async {
        fallback.recordFailure(keys, now: now)
        for key in keys {
            let l = if case .user = key { limits.perUser } else { limits.perAddress }
            do {
                // A window that has run out starts again at this failure; reaching the limit locks.
                _ = try await store.client.query(
                    """
                    INSERT INTO login_failures AS f (key, window_start, failures, locked_until)
                    VALUES (\(key.storeKey), \(now), 1, CASE WHEN 1 >= \(l.maxFailures) THEN \(now + l.lockout) ELSE 0 END)
                    ON CONFLICT (key) DO UPDATE SET
                        window_start = CASE WHEN \(now) - f.window_start > \(l.window) THEN \(now) ELSE f.window_start END,
                        failures = CASE WHEN \(now) - f.window_start > \(l.window) THEN 1 ELSE f.failures + 1 END,
                        locked_until = CASE
                            WHEN (CASE WHEN \(now) - f.window_start > \(l.window) THEN 1 ELSE f.failures + 1 END) >= \(l.maxFailures)
                            THEN \(now + l.lockout) ELSE f.locked_until END
                    """,
                    logger: logger
                )
            } catch {
                logger.warning("Failed logins: the shared count could not be updated; counting in this process")
            }
        }
    }

    /// A correct password clears the user's count, on every instance (not the address's).
    public func recordSuccess(user: String) async {
        fallback.recordSuccess(user: user)
        _ = try? await store.client.query(
            "DELETE FROM login_failures WHERE key = \(LoginThrottle.Key.user(user).storeKey)",
            logger: logger
        )
    }
}
