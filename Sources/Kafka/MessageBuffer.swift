import Synchronization

/// Hands messages from the poll thread to the one task that iterates them.
///
/// The messages of a partition the application paused are set aside, in order, until it is
/// resumed: librdkafka stops fetching a paused partition, but what it had already handed over
/// would otherwise stay in line ahead of every other partition's messages (a breaking item behind
/// a backlog). Set aside, they count towards `count` (the lag) but not towards `readyCount`, so
/// they never make the poll loop wait.
final class MessageBuffer: Sendable {
    private struct State {
        var items: [KafkaMessage] = []
        var head = 0
        var waiter: CheckedContinuation<KafkaMessage?, Never>?
        var finished = false
        /// Paused partitions, each with its messages set aside, oldest first.
        var held: [TopicPartition: [KafkaMessage]] = [:]
        var heldCount = 0

        var readyCount: Int { items.count - head }

        mutating func popFirst() -> KafkaMessage? {
            guard head < items.count else { return nil }
            let item = items[head]
            head += 1
            // Compact once the consumed prefix dominates, so memory stays bounded by the capacity.
            if head >= 1024 && head * 2 >= items.count {
                items.removeFirst(head)
                head = 0
            }
            return item
        }

        /// Keeps the ready messages that `keep` accepts, in order; the others go to `removed`.
        mutating func partitionReady(keep: (KafkaMessage) -> Bool, removed: (KafkaMessage) -> Void) {
            var kept: [KafkaMessage] = []
            kept.reserveCapacity(readyCount)
            for item in items[head...] {
                if keep(item) { kept.append(item) } else { removed(item) }
            }
            items = kept
            head = 0
        }
    }

    private let state = Mutex(State())

    /// Every message buffered, set aside or not.
    var count: Int { state.withLock { $0.readyCount + $0.heldCount } }
    /// Messages the application can take now.
    var readyCount: Int { state.withLock { $0.readyCount } }

    func append(_ message: KafkaMessage) {
        let waiter = state.withLock { state -> CheckedContinuation<KafkaMessage?, Never>? in
            if !state.held.isEmpty, state.held[message.topicPartition] != nil {
                state.held[message.topicPartition]?.append(message)
                state.heldCount += 1
                return nil
            }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.items.append(message)
            return nil
        }
        waiter?.resume(returning: message)
    }

    /// Sets these partitions' messages aside, those buffered now and those that come, until
    /// `release` or `revoke`. Only for assigned partitions: a hold outlives nothing else.
    func hold(_ partitions: [TopicPartition]) {
        state.withLock { state in
            var added = false
            for p in partitions where state.held[p] == nil {
                state.held[p] = []
                added = true
            }
            guard added else { return }
            let held = state.held
            var setAside: [KafkaMessage] = []
            state.partitionReady(keep: { held[$0.topicPartition] == nil }) { setAside.append($0) }
            for message in setAside { state.held[message.topicPartition]?.append(message) }
            state.heldCount += setAside.count
        }
    }

    /// Puts these partitions' messages back in line (they are older than any that come later).
    func release(_ partitions: [TopicPartition]) {
        let handOver = state.withLock { state -> (CheckedContinuation<KafkaMessage?, Never>, KafkaMessage)? in
            var back: [KafkaMessage] = []
            for p in partitions {
                guard let messages = state.held.removeValue(forKey: p) else { continue }
                state.heldCount -= messages.count
                back += messages
            }
            guard !back.isEmpty else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                state.items.append(contentsOf: back.dropFirst())
                return (waiter, back[0])
            }
            state.items.append(contentsOf: back)
            return nil
        }
        if let (waiter, message) = handOver { waiter.resume(returning: message) }
    }

    /// Drops the messages of partitions that left, set aside or not, and forgets their pause.
    func revoke(_ partitions: Set<TopicPartition>) {
        state.withLock { state in
            state.partitionReady(keep: { !partitions.contains($0.topicPartition) }) { _ in }
            for p in partitions {
                if let messages = state.held.removeValue(forKey: p) { state.heldCount -= messages.count }
            }
        }
    }

    /// Ends the sequence once the ready messages are taken (those set aside are not delivered:
    /// uncommitted, they are read again by the partition's next owner).
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<KafkaMessage?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    func next() async -> KafkaMessage? {
        if let ready = state.withLock({ $0.popFirst() }) { return ready }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let immediate: KafkaMessage?? = state.withLock { state in
                    if let item = state.popFirst() { return .some(item) }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return .none
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    var isFinished: Bool { state.withLock { $0.finished && $0.readyCount == 0 } }

    /// A reader is waiting in `next()` (for tests).
    var hasWaiter: Bool { state.withLock { $0.waiter != nil } }

    /// Takes what is ready now, up to `max`, without waiting.
    func drain(max: Int) -> [KafkaMessage] {
        state.withLock { state in
            var batch: [KafkaMessage] = []
            while batch.count < max, let item = state.popFirst() { batch.append(item) }
            return batch
        }
    }
}
