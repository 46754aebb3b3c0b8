import Kafka

/// Per partition, the offset that is safe to commit: every message at or below it is finished
/// (sent, dead-lettered or dropped), although messages finish out of order.
public struct OffsetTracker: Sendable {
    private struct Partition {
        /// Offsets handed to the pool, ascending, from `head` on.
        var started: [Int64] = []
        var head = 0
        var finished: Set<Int64> = []
        /// Next offset to read once everything up to it is finished.
        var commitPoint: Int64?
        var lastCommitted: Int64?
    }

    private var partitions: [TopicPartition: Partition] = [:]

    public init() {}

    /// A message entered the pipeline; offsets of a partition must start in ascending order.
    public mutating func started(_ partition: TopicPartition, offset: Int64) {
        partitions[partition, default: Partition()].started.append(offset)
    }

    /// A message left the pipeline; the commit point moves past every finished prefix.
    public mutating func finished(_ partition: TopicPartition, offset: Int64) {
        guard var p = partitions[partition] else { return }
        p.finished.insert(offset)
        while p.head < p.started.count, p.finished.remove(p.started[p.head]) != nil {
            p.commitPoint = p.started[p.head] + 1
            p.head += 1
        }
        if p.head > 1024, p.head * 2 > p.started.count {
            p.started.removeFirst(p.head)
            p.head = 0
        }
        partitions[partition] = p
    }

    /// Messages started and not yet finished.
    public var inFlight: Int { partitions.values.reduce(0) { $0 + $1.started.count - $1.head } }

    /// Offsets to commit now: partitions whose commit point moved since the last commit.
    public func committable() -> [TopicPartitionOffset] {
        committable { _ in true }
    }

    /// Offsets to commit now, for these partitions only.
    public func committable(in wanted: Set<TopicPartition>) -> [TopicPartitionOffset] {
        committable { wanted.contains($0) }
    }

    private func committable(where include: (TopicPartition) -> Bool) -> [TopicPartitionOffset] {
        partitions.compactMap { tp, p in
            guard include(tp), let point = p.commitPoint, point != p.lastCommitted else { return nil }
            return TopicPartitionOffset(tp, offset: point)
        }.sorted {
            ($0.topicPartition.topic, $0.topicPartition.partition) < (
                $1.topicPartition.topic, $1.topicPartition.partition
            )
        }
    }

    /// The broker accepted these offsets.
    public mutating func committed(_ offsets: [TopicPartitionOffset]) {
        for o in offsets { partitions[o.topicPartition]?.lastCommitted = o.offset }
    }

    /// The partition left this member: forget it (its unfinished work will be redone by the next owner).
    public mutating func forget(_ partition: TopicPartition) {
        partitions.removeValue(forKey: partition)
    }
}
