/// Decides which partitions are paused: those the application paused, plus every assigned one
/// once the buffer has stayed full for `pauseAfter` (with hysteresis down to half of it).
///
/// A buffer that is full only briefly holds the poll loop instead: librdkafka 2.0 backs a resumed
/// partition's fetch off for about a second, so pausing on every brief fill caps the throughput
/// at one buffer per second (measured: 10,500 sends/s with a 10,000-message buffer).
struct PauseController: Sendable, Equatable {
    private(set) var assignment: Set<TopicPartition> = []
    private(set) var userPaused: Set<TopicPartition> = []
    private(set) var paused: Set<TopicPartition> = []
    private(set) var backpressure = false
    /// Partitions that left while paused: librdkafka still has them paused if they come back.
    private(set) var pausedWhenRevoked: Set<TopicPartition> = []
    let capacity: Int
    let pauseAfter: Duration

    init(capacity: Int, pauseAfter: Duration = .seconds(1)) {
        self.capacity = max(1, capacity)
        self.pauseAfter = pauseAfter
    }

    /// True while the poll loop should wait for the application rather than poll.
    func shouldHold(buffered: Int, fullFor: Duration) -> Bool {
        buffered >= capacity && !backpressure && fullFor < pauseAfter
    }

    /// What to change in librdkafka so that its pause state matches the decision.
    struct Changes: Equatable {
        var pause: [TopicPartition] = []
        var resume: [TopicPartition] = []
        var isEmpty: Bool { pause.isEmpty && resume.isEmpty }
    }

    mutating func assigned(_ partitions: [TopicPartition]) {
        assignment.formUnion(partitions)
        // librdkafka keeps a partition's pause flag across unassign and assign (librdkafka#1849):
        // one paused when it left comes back paused, and the next reconcile resumes it unless it
        // should stay paused. Others are not touched (a resume right after assign is not free).
        let stillPaused = pausedWhenRevoked.intersection(partitions)
        paused.formUnion(stillPaused)
        pausedWhenRevoked.subtract(stillPaused)
    }

    mutating func revoked(_ partitions: [TopicPartition]) {
        assignment.subtract(partitions)
        userPaused.subtract(partitions)
        pausedWhenRevoked.formUnion(paused.intersection(partitions))
        paused.subtract(partitions)
    }

    /// Pauses those of `partitions` that are assigned and returns them. A pause asked for a
    /// partition that has already left is dropped: kept, it would pause the partition when it
    /// comes back, with nobody left to resume it.
    @discardableResult
    mutating func pauseByUser(_ partitions: [TopicPartition]) -> [TopicPartition] {
        let assigned = partitions.filter(assignment.contains)
        userPaused.formUnion(assigned)
        return assigned
    }

    mutating func resumeByUser(_ partitions: [TopicPartition]) { userPaused.subtract(partitions) }

    /// Recomputes the decision for the current buffer depth and how long it has been full.
    mutating func reconcile(buffered: Int, fullFor: Duration = .zero) -> Changes {
        if buffered >= capacity && fullFor >= pauseAfter {
            backpressure = true
        } else if buffered <= capacity / 2 {
            backpressure = false
        }
        let desired = (backpressure ? assignment : userPaused.intersection(assignment))
        let changes = Changes(
            pause: desired.subtracting(paused).sorted(by: Self.order),
            resume: paused.subtracting(desired).sorted(by: Self.order)
        )
        paused = desired
        return changes
    }

    private static func order(_ a: TopicPartition, _ b: TopicPartition) -> Bool {
        (a.topic, a.partition) < (b.topic, b.partition)
    }
}
