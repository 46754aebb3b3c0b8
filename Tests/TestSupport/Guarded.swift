/// Runs `body` to its end, or cancels it and gives `otherwise` once `timeout` has passed: a guard
/// against a hang, never a wait for something to happen (`body` waits for the event itself).
public func guarded<T: Sendable>(
    timeout: Duration,
    otherwise: T,
    _ body: @escaping @Sendable () async -> T
) async -> T {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first: T? = await group.next() ?? nil
        group.cancelAll()
        return first ?? otherwise
    }
}
