import Synchronization

/// Decides, per send, which of the active faults fire.
public final class FaultInjector: Sendable {
    /// What to do to one send.
    public struct Decision: Sendable, Equatable {
        public var latencyMs = 0
        public var drop = false
        /// An injected answer: status, Retry-After, and NH's error detail.
        public var answer: (status: Int, retryAfter: Int?, detail: String)?

        public static func == (a: Decision, b: Decision) -> Bool {
            a.latencyMs == b.latencyMs && a.drop == b.drop && a.answer?.status == b.answer?.status
                && a.answer?.retryAfter == b.answer?.retryAfter
        }
    }

    private struct Active {
        var fault: Fault
        var fired = 0
        var passed = 0
    }

    private let faults = Mutex<[Active]>([])
    private let random: @Sendable () -> Double

    public init(random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.random = random
    }

    public func add(_ fault: Fault) { faults.withLock { $0.append(Active(fault: fault)) } }

    public func clear() { faults.withLock { $0.removeAll() } }

    public var active: [Fault] { faults.withLock { $0.map(\.fault) } }

    public func decide(tags: [String]) -> Decision {
        faults.withLock { faults in
            var decision = Decision()
            for i in faults.indices {
                let fault = faults[i].fault
                if let tag = fault.tag, !tags.contains(tag) { continue }
                if let count = fault.count, faults[i].fired >= count { continue }
                if let after = fault.after, faults[i].passed < after {
                    faults[i].passed += 1
                    continue
                }
                var fired = false
                if let latency = fault.latencyMs, random() < (fault.rate ?? 1) {
                    decision.latencyMs += latency
                    fired = true
                }
                if let drop = fault.dropConnection, !decision.drop, random() < drop {
                    decision.drop = true
                    fired = true
                }
                if decision.answer == nil, fault.status != nil || fault.quotaExceeded == true,
                    random() < (fault.rate ?? 1)
                {
                    if fault.quotaExceeded == true {
                        decision.answer = (
                            403, fault.retryAfter, "QuotaExceeded: the namespace's send quota is exceeded (injected)"
                        )
                    } else if let status = fault.status {
                        decision.answer = (status, fault.retryAfter, "Injected fault: HTTP \(status)")
                    }
                    fired = true
                }
                if fired { faults[i].fired += 1 }
            }
            return decision
        }
    }
}
