import Kafka
import Synchronization

/// What the pipeline's tasks share: offsets, ownership, items in progress, recent ids.
final class PipelineState: Sendable {
    struct ItemKey: Hashable {
        let partition: TopicPartition
        let offset: Int64
    }

    private struct State {
        var tracker = OffsetTracker()
        var assigned: Set<TopicPartition> = []
        /// Sends still running per item; the item finishes at zero.
        var remaining: [ItemKey: Int] = [:]
        /// Items that cannot finish (a dead-letter write failed): their offsets must not be committed.
        var stuck: Set<ItemKey> = []
        var recent: RecentIDs
        var assignedAt = ContinuousClock.now
    }

    private let state: Mutex<State>

    init(dedupeWindow: Int) {
        state = Mutex(State(recent: RecentIDs(capacity: dedupeWindow)))
    }

    func assign(_ partitions: [TopicPartition]) {
        state.withLock { s in
            s.assigned.formUnion(partitions)
            s.assignedAt = .now
        }
    }

    /// When partitions last arrived; nil while this member owns none.
    var assignedAt: ContinuousClock.Instant? { state.withLock { $0.assigned.isEmpty ? nil : $0.assignedAt } }

    /// The partitions leave: no more work starts on them.
    func revoke(_ partitions: [TopicPartition]) { state.withLock { $0.assigned.subtract(partitions) } }

    /// Drops the revoked partitions' offsets once their work is done or abandoned.
    func forget(_ partitions: [TopicPartition]) {
        state.withLock { s in for p in partitions { s.tracker.forget(p) } }
    }

    /// Registers a message; false when its partition is no longer ours (the next owner reads it).
    func start(_ message: KafkaMessage) -> Bool {
        state.withLock { s in
            guard s.assigned.contains(message.topicPartition) else { return false }
            s.tracker.started(message.topicPartition, offset: message.offset)
            return true
        }
    }

    /// The item will finish after `sends` sends.
    func expect(_ key: ItemKey, sends: Int) { state.withLock { $0.remaining[key] = sends } }

    /// One send of the item ended (delivered or dead-lettered).
    func sendEnded(_ key: ItemKey) {
        state.withLock { s in
            let left = (s.remaining[key] ?? 1) - 1
            if left > 0 {
                s.remaining[key] = left
            } else {
                s.remaining.removeValue(forKey: key)
                if !s.stuck.contains(key) { s.tracker.finished(key.partition, offset: key.offset) }
            }
        }
    }

    /// The item is done without sends (invalid, expired, duplicate).
    func finish(_ key: ItemKey) { state.withLock { $0.tracker.finished(key.partition, offset: key.offset) } }

    /// The item can never be marked done in this process: its offset stays uncommitted.
    func markStuck(_ key: ItemKey) { state.withLock { _ = $0.stuck.insert(key) } }

    /// True when `id` was not sent recently (and is now remembered).
    func firstSighting(of id: String) -> Bool { state.withLock { $0.recent.insert(id) } }

    /// Offsets safe to commit, for partitions still ours.
    func committable(only partitions: Set<TopicPartition>? = nil) -> [TopicPartitionOffset] {
        state.withLock { s in s.tracker.committable().filter { s.assigned.contains($0.topicPartition) && (partitions?.contains($0.topicPartition) ?? true) } }
    }

    func committed(_ offsets: [TopicPartitionOffset]) { state.withLock { $0.tracker.committed(offsets) } }

    /// Messages started and not finished.
    var inFlight: Int { state.withLock { $0.tracker.inFlight } }

    func inFlight(in partitions: Set<TopicPartition>) -> Int {
        state.withLock { s in s.remaining.keys.filter { partitions.contains($0.partition) }.count }
    }
}
