import Foundation
import Kafka
import Synchronization

/// The running process's `HealthState`: events from the consumer, the pipeline and the dead-letter
/// sink are stamped and applied under one lock; the probes read verdicts. Every method returns at
/// once, so it may be called from the consumer's poll thread and the pipeline's loop.
public final class HealthMonitor: Sendable {
    private let state: Mutex<HealthState>
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant
    /// Reads the poll loop's turn counter (nil: nothing polls in this process).
    private let pollTurns: (@Sendable () -> UInt64)?

    public init(configuration: HealthState.Configuration, pollTurns: (@Sendable () -> UInt64)? = nil) {
        origin = clock.now
        state = Mutex(HealthState(configuration: configuration, now: .zero))
        self.pollTurns = pollTurns
    }

    /// A process with no consumer: alive and ready while it answers.
    public static func serverOnly() -> HealthMonitor {
        HealthMonitor(configuration: HealthState.Configuration(consumes: false))
    }

    private var now: Duration { origin.duration(to: clock.now) }

    public func assigned(_ partitions: [TopicPartition]) { state.withLock { $0.assigned(partitions) } }
    public func revoked(_ partitions: [TopicPartition]) { state.withLock { $0.revoked(partitions) } }
    public func hubUnavailable(_ hub: String = "hub", reason: String) {
        state.withLock { $0.hubUnavailable(hub, reason: reason) }
    }
    public func hubAvailable(_ hub: String = "hub") { state.withLock { $0.hubAvailable(hub) } }
    public func deadLetterWriteFailed(reason: String) { state.withLock { $0.deadLetterWriteFailed(reason: reason) } }
    public func deadLetterWritten() { state.withLock { $0.deadLetterWritten() } }
    public func dependencyFailed(_ name: String, reason: String) {
        state.withLock { $0.dependencyFailed(name, reason: reason) }
    }
    public func dependencyAnswered(_ name: String) { state.withLock { $0.dependencyAnswered(name) } }

    /// Hears a `PingWatch`'s answers about the dependency called `name`.
    public func watching(_ name: String) -> @Sendable (String?) -> Void {
        { [self] failure in
            if let failure { dependencyFailed(name, reason: failure) } else { dependencyAnswered(name) }
        }
    }

    public func liveness() -> HealthState.Verdict {
        let now = self.now
        return state.withLock {
            observePoll(&$0, now: now)
            return $0.liveness(now: now)
        }
    }

    public func readiness() -> HealthState.Verdict {
        let now = self.now
        return state.withLock {
            observePoll(&$0, now: now)
            return $0.readiness(now: now)
        }
    }

    private func observePoll(_ state: inout HealthState, now: Duration) {
        if let pollTurns { state.polled(turns: pollTurns(), now: now) }
    }
}

extension HealthState.Verdict {
    /// The probe's body: `{"healthy":…,"reasons":[…],"notes":[…],"checks":{"name":{"passed":…,"detail":…,"decides":…}}}`.
    public var json: String {
        let body: [String: Any] = [
            "healthy": healthy,
            "reasons": reasons,
            "notes": notes,
            "checks": Dictionary(
                checks.map {
                    ($0.name, ["passed": $0.passed, "detail": $0.detail, "decides": $0.decides] as [String: Any])
                },
                uniquingKeysWith: { first, _ in first }
            ),
        ]
        let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
