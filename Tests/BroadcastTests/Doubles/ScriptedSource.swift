import Broadcast
import Foundation
import Kafka
import Synchronization

/// A record source driven by the test: batches pushed in, rebalances triggered on a thread of
/// their own (as librdkafka's poll thread would), commits recorded.
final class ScriptedSource: RecordSource, Sendable {
    private struct State {
        var handlers = RebalanceHandlers()
        var batches: [[KafkaMessage]] = []
        var waiter: CheckedContinuation<SourceBatch, Never>?
        /// What the waiter asked for at most.
        var waiterMax = 0
        var finished = false
        var commits: [[TopicPartitionOffset]] = []
        var refuseCommits = false
        var paused: Set<TopicPartition> = []

        mutating func takeReady(max: Int) -> [KafkaMessage] {
            var taken: [KafkaMessage] = []
            while taken.count < max, !batches.isEmpty {
                let part = batches[0].prefix(max - taken.count)
                taken += part
                batches[0].removeFirst(part.count)
                if batches[0].isEmpty { batches.removeFirst() }
            }
            return taken
        }
    }

    private let state = Mutex(State())

    func setRebalanceHandlers(_ handlers: RebalanceHandlers) {
        state.withLock { $0.handlers = handlers }
    }

    func nextBatch(max: Int, timeout: Duration) async -> SourceBatch {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { s -> SourceBatch? in
                    if !s.batches.isEmpty { return .records(s.takeReady(max: max)) }
                    if s.finished || Task.isCancelled { return .finished }
                    s.waiter = continuation
                    s.waiterMax = max
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { s in
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: .timedOut)
        }
    }

    /// What was pushed and not yet taken, at most `max`, in order (a pushed batch may be split).
    func takeReady(max: Int) -> [KafkaMessage] {
        state.withLock { $0.takeReady(max: max) }
    }

    /// A waiting fetch gets what it asked for at most; the rest waits for the next, as in a consumer's buffer.
    func push(_ messages: [KafkaMessage]) {
        let handOver = state.withLock { s -> (CheckedContinuation<SourceBatch, Never>, [KafkaMessage])? in
            s.batches.append(messages)
            guard let waiter = s.waiter else { return nil }
            s.waiter = nil
            return (waiter, s.takeReady(max: s.waiterMax))
        }
        if let (waiter, batch) = handOver { waiter.resume(returning: .records(batch)) }
    }

    func commit(_ offsets: [TopicPartitionOffset]) async throws {
        try state.withLock { s in
            if s.refuseCommits { throw KafkaError.configuration("commit refused by the test") }
            s.commits.append(offsets)
        }
    }

    var lag: Int64 { 0 }

    func pause(_ partitions: [TopicPartition]) { state.withLock { $0.paused.formUnion(partitions) } }
    func resume(_ partitions: [TopicPartition]) { state.withLock { $0.paused.subtract(partitions) } }
    /// What the pipeline has paused now.
    var paused: Set<TopicPartition> { state.withLock { $0.paused } }

    var commits: [[TopicPartitionOffset]] { state.withLock { $0.commits } }

    /// The highest committed offset per partition.
    var committed: [TopicPartition: Int64] {
        commits.joined().reduce(into: [:]) { $0[$1.topicPartition] = max($0[$1.topicPartition] ?? 0, $1.offset) }
    }

    func assign(_ partitions: [TopicPartition]) {
        state.withLock { $0.handlers }.onAssign(partitions)
    }

    /// Runs the revoke handler on a thread (it blocks until the pipeline lets go) and returns what
    /// it asked to commit, which a consumer would commit before the partitions go.
    func revoke(_ partitions: [TopicPartition]) async -> [TopicPartitionOffset] {
        let handlers = state.withLock { $0.handlers }
        let offsets = await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: handlers.onRevoke(partitions)) }.start()
        }
        state.withLock { $0.commits.append(offsets) }
        return offsets
    }
}

func message(_ partition: TopicPartition, _ offset: Int64) -> KafkaMessage {
    KafkaMessage(
        topic: partition.topic,
        partition: partition.partition,
        offset: offset,
        value: Array("\(partition.partition)/\(offset)".utf8)
    )
}
