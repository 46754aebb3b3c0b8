import Kafka

/// What the probes answer, from what the process has reported about itself: events in, verdicts
/// out. No clock, no lock and no I/O, so every transition is unit-tested; `HealthMonitor` is the
/// shell that stamps events with the time and guards the value.
///
/// Alive: the consumer's poll loop turned within `pollStallLimit` (librdkafka's loop turns every
/// 100 ms even when idle, so a longer stop means a hung thread). Ready: alive, and partitions owned
/// or a join under way, the hub taking sends (the engine's own verdict), the dead-letter sink
/// storing records.
public struct HealthState: Sendable, Equatable {
    public struct Configuration: Sendable, Equatable {
        /// Whether there is a consumer whose poll loop and partitions count (`run`: yes; the emulator: no).
        public var consumes: Bool
        /// A poll loop that has not turned for this long is taken as hung. Generous: a liveness
        /// failure restarts the process, which costs a rebalance.
        public var pollStallLimit: Duration = .seconds(30)

        public init(consumes: Bool) {
            self.consumes = consumes
        }
    }

    /// One check's outcome: `detail` is safe to show (no secret, no payload).
    public struct Check: Sendable, Equatable {
        public var name: String
        public var passed: Bool
        public var detail: String
    }

    /// A probe's answer: healthy only if every check passed.
    public struct Verdict: Sendable, Equatable {
        public var checks: [Check]
        public var healthy: Bool { checks.allSatisfy(\.passed) }
        /// The failed checks, as `name: detail`.
        public var reasons: [String] { checks.filter { !$0.passed }.map { "\($0.name): \($0.detail)" } }
    }

    public let configuration: Configuration
    private var owned: Set<TopicPartition> = []
    /// The member has asked to join (start) or lost every partition (a rebalance is under way) and
    /// has not been given an assignment since.
    private var joining = true
    private var hubUnavailableReason: String?
    private var deadLetterFailure: String?
    private var pollTurns: UInt64?
    private var lastPollProgressAt: Duration

    /// `now` is when the process started watching itself: the poll loop gets its stall limit from then.
    public init(configuration: Configuration, now: Duration) {
        self.configuration = configuration
        lastPollProgressAt = now
    }

    // MARK: Events

    /// The poll loop's turn counter, read at `now`: progress when it moved since the last reading.
    public mutating func polled(turns: UInt64, now: Duration) {
        if pollTurns != turns {
            pollTurns = turns
            lastPollProgressAt = now
        }
    }

    public mutating func assigned(_ partitions: [TopicPartition]) {
        owned.formUnion(partitions)
        // An assignment ends the join, even an empty one (more members than partitions).
        joining = false
    }

    public mutating func revoked(_ partitions: [TopicPartition]) {
        owned.subtract(partitions)
        // Losing everything means a rebalance is under way (eager protocol): an assignment follows.
        if owned.isEmpty { joining = true }
    }

    public mutating func hubUnavailable(reason: String) {
        hubUnavailableReason = reason
    }

    public mutating func hubAvailable() {
        hubUnavailableReason = nil
    }

    public mutating func deadLetterWriteFailed(reason: String) {
        deadLetterFailure = reason
    }

    public mutating func deadLetterWritten() {
        deadLetterFailure = nil
    }

    // MARK: Verdicts

    /// `GET /healthz`: the process is alive and its poll loop turns.
    public func liveness(now: Duration) -> Verdict {
        guard configuration.consumes else { return Verdict(checks: [Check(name: "process", passed: true, detail: "running")]) }
        let still = now - lastPollProgressAt
        return Verdict(checks: [Check(name: "pollLoop", passed: still <= configuration.pollStallLimit,
                                      detail: still <= configuration.pollStallLimit ? "turning" : "no turn for \(still.components.seconds) s")])
    }

    /// `GET /readyz`: alive, and able to do its work.
    public func readiness(now: Duration) -> Verdict {
        var checks = liveness(now: now).checks
        guard configuration.consumes else { return Verdict(checks: checks) }
        let partitions = owned.isEmpty
            ? (joining ? Check(name: "partitions", passed: true, detail: "joining the group")
                       : Check(name: "partitions", passed: false, detail: "none assigned"))
            : Check(name: "partitions", passed: true, detail: "\(owned.count) assigned")
        checks.append(partitions)
        checks.append(hubUnavailableReason.map { Check(name: "hub", passed: false, detail: "unavailable: \($0)") }
                      ?? Check(name: "hub", passed: true, detail: "available"))
        checks.append(deadLetterFailure.map { Check(name: "deadLetters", passed: false, detail: "write failed: \($0)") }
                      ?? Check(name: "deadLetters", passed: true, detail: "writable"))
        return Verdict(checks: checks)
    }
}
