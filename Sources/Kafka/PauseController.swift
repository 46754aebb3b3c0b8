/// Decides which partitions are paused: those the application paused, plus every assigned one
/// while the buffer is over its capacity (with hysteresis down to half of it).
struct PauseController: Sendable, Equatable {
    private(set) var assignment: Set<TopicPartition> = []
    private(set) var userPaused: Set<TopicPartition> = []
    private(set) var paused: Set<TopicPartition> = []
    private(set) var backpressure = false
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// What to change in librdkafka so that its pause state matches the decision.
    struct Changes: Equatable {
        var pause: [TopicPartition] = []
        var resume: [TopicPartition] = []
        var isEmpty: Bool { pause.isEmpty && resume.isEmpty }
    }

    mutating func assigned(_ partitions: [TopicPartition]) {
        assignment.formUnion(partitions)
    }

    mutating func revoked(_ partitions: [TopicPartition]) {
        assignment.subtract(partitions)
        userPaused.subtract(partitions)
        // librdkafka forgets the pause state of a partition that leaves the assignment.
        paused.subtract(partitions)
    }

    mutating func pauseByUser(_ partitions: [TopicPartition]) { userPaused.formUnion(partitions) }

    mutating func resumeByUser(_ partitions: [TopicPartition]) { userPaused.subtract(partitions) }

    /// Recomputes the decision for the current buffer depth.
    mutating func reconcile(buffered: Int) -> Changes {
        if buffered >= capacity {
            backpressure = true
        } else if buffered <= capacity / 2 {
            backpressure = false
        }
        let desired = (backpressure ? assignment : userPaused.intersection(assignment))
        let changes = Changes(
            pause: desired.subtracting(paused).sorted(by: Self.order),
            resume: paused.subtracting(desired).sorted(by: Self.order))
        paused = desired
        return changes
    }

    private static func order(_ a: TopicPartition, _ b: TopicPartition) -> Bool {
        (a.topic, a.partition) < (b.topic, b.partition)
    }
}
