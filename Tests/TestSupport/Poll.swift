/// Asks `check` every `interval` until it gives a value, or nil once `timeout` (a guard, not a
/// timing assumption) has passed. Only for servers in other processes that offer nothing to wait
/// on — an HTTP status, the emulator's delivery log, `pg_isready` —: the tests' one polling loop.
public func poll<T>(every interval: Duration, timeout: Duration, _ check: () async throws -> T?) async throws -> T? {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if let value = try await check() { return value }
        try await Task.sleep(for: interval)
    }
    return nil
}
