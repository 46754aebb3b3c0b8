import Synchronization

/// Bounds sends in flight by the AIMD limiter's current limit; `acquire` waits for a slot.
final class ConcurrencyGate: Sendable {
    fileprivate struct State {
        var limiter: AIMDLimiter
        var inUse = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>
    private let clock: @Sendable () -> Double

    init(limiter: AIMDLimiter, clock: @escaping @Sendable () -> Double) {
        state = Mutex(State(limiter: limiter))
        self.clock = clock
    }

    var limit: Int { state.withLock { $0.limiter.limit } }
    var inUse: Int { state.withLock { $0.inUse } }

    func acquire() async {
        let granted = state.withLock { s -> Bool in
            guard s.inUse < s.limiter.limit, s.waiters.isEmpty else { return false }
            s.inUse += 1
            return true
        }
        if granted { return }
        await withCheckedContinuation { continuation in
            let now = state.withLock { s -> Bool in
                if s.inUse < s.limiter.limit && s.waiters.isEmpty {
                    s.inUse += 1
                    return true
                }
                s.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// A slot comes back; `succeeded` feeds the limiter's additive increase (nil: work that was not a send).
    func release(succeeded: Bool?) {
        let wake = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.inUse -= 1
            if succeeded == true { s.limiter.succeeded() }
            return s.takeWaiters()
        }
        for waiter in wake { waiter.resume() }
    }

    /// Throttling was seen: halve the limit (at most once per cooldown).
    func throttled() {
        let now = clock()
        state.withLock { $0.limiter.throttled(atSeconds: now) }
    }
}

private extension ConcurrencyGate.State {
    /// Waiters that fit under the limit now; their slots are taken on their behalf.
    mutating func takeWaiters() -> [CheckedContinuation<Void, Never>] {
        var woken: [CheckedContinuation<Void, Never>] = []
        while inUse < limiter.limit, !waiters.isEmpty {
            woken.append(waiters.removeFirst())
            inUse += 1
        }
        return woken
    }
}
