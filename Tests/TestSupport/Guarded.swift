/// Runs `body` to its end, cancelling it once `timeout` has passed: a guard against a hang, never a
/// wait for something to happen (`body` waits for the event itself). Cancelled, `body` must end
/// soon with what it has (an async stream's iteration ends), and that is the result.
public func guarded<T: Sendable>(timeout: Duration, _ body: @escaping @Sendable () async -> T) async -> T {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        while let next = await group.next() {
            // The body's result, or the guard's nil: then the body, cancelled, ends with what it has.
            group.cancelAll()
            if let value = next { return value }
        }
        preconditionFailure("the body's task always gives a result")
    }
}
