import Kafka

/// What the probes answer, from what the process has reported about itself: events in, verdicts
/// out. No clock, no lock and no I/O, so every transition is unit-tested; `HealthMonitor` is the
/// shell that stamps events with the time and guards the value.
///
/// Alive: the consumer's poll loop turned within `pollStallLimit` (librdkafka's loop turns every
/// 100 ms even when idle, so a longer stop means a hung thread). Ready: this process can do its
/// work now: alive, what it depends on answering (Kafka for `run`, the store for the backend),
/// the dead-letter sink storing records. A
/// member without partitions is ready (a rollout's surge pod, a group with more members than
/// partitions): it takes its share at the next rebalance. The hub's state is said in both bodies
/// but decides neither: an outage is the hub's, and an unready fleet would only block rollouts
/// and node drains for its length.
public struct HealthState: Sendable, Equatable {
    public struct Configuration: Sendable, Equatable {
        /// Whether there is a consumer whose poll loop and partitions count (`run`: yes; the emulator: no).
        public var consumes: Bool
        /// What must answer for the process to be ready, each asked by a `PingWatch`: "kafka"
        /// (`run`), "store" (the backend). Not ready until each has answered once.
        public var dependencies: [String] = []
        /// A poll loop that has not turned for this long is taken as hung. Generous: a liveness
        /// failure restarts the process, which costs a rebalance.
        public var pollStallLimit: Duration = .seconds(30)
        /// The hubs' names when there are several: each then has a check of its own, `hub:<name>`.
        public var hubs: [String] = []

        public init(consumes: Bool) {
            self.consumes = consumes
        }
    }

    /// One check's outcome: `detail` is safe to show (no secret, no payload). `decides`: false for
    /// what the body reports without it deciding the verdict (the hub).
    public struct Check: Sendable, Equatable {
        public var name: String
        public var passed: Bool
        public var detail: String
        public var decides = true
    }

    /// A probe's answer: healthy only if every deciding check passed.
    public struct Verdict: Sendable, Equatable {
        public var checks: [Check]
        public var healthy: Bool { checks.allSatisfy { $0.passed || !$0.decides } }
        /// The failed deciding checks, as `name: detail`.
        public var reasons: [String] { checks.filter { !$0.passed && $0.decides }.map { "\($0.name): \($0.detail)" } }
        /// The failed checks that do not decide, as `name: detail`.
        public var notes: [String] { checks.filter { !$0.passed && !$0.decides }.map { "\($0.name): \($0.detail)" } }
    }

    public let configuration: Configuration
    private var owned: Set<TopicPartition> = []
    /// The member has asked to join (start) or lost every partition (a rebalance is under way) and
    /// has not been given an assignment since.
    private var joining = true
    /// Why each hub held as unavailable is, by name.
    private var unavailableHubs: [String: String] = [:]
    private var deadLetterFailure: String?
    /// Why each dependency that is not answering is not (absent: it answered last time).
    private var dependencyFailures: [String: String] = [:]
    private var pollTurns: UInt64?
    private var lastPollProgressAt: Duration

    /// `now` is when the process started watching itself: the poll loop gets its stall limit from then.
    public init(configuration: Configuration, now: Duration) {
        self.configuration = configuration
        lastPollProgressAt = now
        // Ready once each has answered, not before it was asked.
        for name in configuration.dependencies { dependencyFailures[name] = "not checked yet" }
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

    public mutating func hubUnavailable(_ hub: String = "hub", reason: String) {
        unavailableHubs[hub] = reason
    }

    public mutating func hubAvailable(_ hub: String = "hub") {
        unavailableHubs[hub] = nil
    }

    public mutating func deadLetterWriteFailed(reason: String) {
        deadLetterFailure = reason
    }

    public mutating func deadLetterWritten() {
        deadLetterFailure = nil
    }

    public mutating func dependencyFailed(_ name: String, reason: String) {
        dependencyFailures[name] = reason
    }

    public mutating func dependencyAnswered(_ name: String) {
        dependencyFailures[name] = nil
    }

    // MARK: Verdicts

    /// `GET /healthz`: the process is alive and its poll loop turns (the hub's state said, not deciding).
    public func liveness(now: Duration) -> Verdict {
        guard configuration.consumes else {
            return Verdict(checks: [Check(name: "process", passed: true, detail: "running")])
        }
        let still = now - lastPollProgressAt
        return Verdict(
            checks: [
                Check(
                    name: "pollLoop",
                    passed: still <= configuration.pollStallLimit,
                    detail: still <= configuration.pollStallLimit
                        ? "turning" : "no turn for \(still.components.seconds) s"
                )
            ] + hubChecks
        )
    }

    /// `GET /readyz`: alive, and able to do its work now.
    public func readiness(now: Duration) -> Verdict {
        var checks = liveness(now: now).checks
        for name in configuration.dependencies {
            checks.append(
                dependencyFailures[name].map { Check(name: name, passed: false, detail: "not answering: \($0)") }
                    ?? Check(name: name, passed: true, detail: "answering")
            )
        }
        guard configuration.consumes else { return Verdict(checks: checks) }
        checks.append(
            Check(
                name: "partitions",
                passed: true,
                detail: owned.isEmpty
                    ? (joining ? "joining the group" : "none assigned: idle until the next rebalance gives it some")
                    : "\(owned.count) assigned"
            )
        )
        checks.append(
            deadLetterFailure.map { Check(name: "deadLetters", passed: false, detail: "write failed: \($0)") }
                ?? Check(name: "deadLetters", passed: true, detail: "writable")
        )
        return Verdict(checks: checks)
    }

    /// The hubs as the engine last judged them: reported, never deciding. One check, `hub`, for
    /// one hub; one per hub, `hub:<name>`, for several.
    private var hubChecks: [Check] {
        guard configuration.hubs.count > 1 else {
            let reason = unavailableHubs.values.sorted().first
            return [
                reason.map { Check(name: "hub", passed: false, detail: "unavailable: \($0)", decides: false) }
                    ?? Check(name: "hub", passed: true, detail: "available", decides: false)
            ]
        }
        return configuration.hubs.map { hub in
            unavailableHubs[hub].map {
                Check(name: "hub:\(hub)", passed: false, detail: "unavailable: \($0)", decides: false)
            }
                ?? Check(name: "hub:\(hub)", passed: true, detail: "available", decides: false)
        }
    }
}
