import DequeModule
import Synchronization

/// Hands messages from the poll thread to the one task that iterates them.
///
/// Topics (the categories) take turns, one message each; within a topic messages keep the order
/// they were fetched in, so each partition's stays in order. A fetch answer brings hundreds of a
/// flooded topic's messages at once, which would otherwise stay in line ahead of a quiet topic's
/// next message (a breaking item behind a backlog). Within a topic, a partition's messages still
/// come in runs, so the application sees one partition's backlog grow and can pause it.
///
/// The messages of a partition the application paused are set aside, in order, until it is
/// resumed: librdkafka stops fetching a paused partition, but what it had already handed over
/// would otherwise still be handed out. Set aside, they count towards `count` (the lag) but not
/// towards `readyCount`, so they never make the poll loop wait.
final class MessageBuffer: Sendable {
    private struct Line {
        let topic: String
        var messages: Deque<KafkaMessage> = []
    }

    private struct State {
        /// One line a topic ever buffered here, found by `index`.
        var lines: [Line] = []
        var index: [String: Int] = [:]
        /// Lines with messages, the next to hand one out first.
        var turns: Deque<Int> = []
        var readyCount = 0
        /// Paused partitions, each with its messages set aside, oldest first.
        var held: [TopicPartition: [KafkaMessage]] = [:]
        var heldCount = 0
        var waiter: CheckedContinuation<KafkaMessage?, Never>?
        var finished = false
        /// The line of the last message appended: a fetch answer brings a topic's messages together.
        var last = -1

        mutating func line(of topic: String) -> Int {
            if last >= 0, lines[last].topic == topic { return last }
            if let found = index[topic] {
                last = found
                return found
            }
            lines.append(Line(topic: topic))
            last = lines.count - 1
            index[topic] = last
            return last
        }

        func isHeld(_ partition: TopicPartition) -> Bool { !held.isEmpty && held[partition] != nil }

        /// Appends a message that nobody is waiting for.
        mutating func push(_ message: KafkaMessage) {
            if isHeld(message.topicPartition) {
                held[message.topicPartition]?.append(message)
                heldCount += 1
                return
            }
            let l = line(of: message.topic)
            lines[l].messages.append(message)
            if lines[l].messages.count == 1 { turns.append(l) }
            readyCount += 1
        }

        mutating func popFirst() -> KafkaMessage? {
            guard let l = turns.popFirst(), let message = lines[l].messages.popFirst() else { return nil }
            if !lines[l].messages.isEmpty { turns.append(l) }
            readyCount -= 1
            return message
        }

        /// Takes these partitions' ready messages out of their topics' lines, in order, each to `removed`.
        mutating func remove(_ partitions: Set<TopicPartition>, removed: (KafkaMessage) -> Void) {
            for topic in Set(partitions.map(\.topic)) {
                guard let l = index[topic], !lines[l].messages.isEmpty else { continue }
                var kept: Deque<KafkaMessage> = []
                for message in lines[l].messages {
                    if partitions.contains(message.topicPartition) { removed(message) } else { kept.append(message) }
                }
                readyCount -= lines[l].messages.count - kept.count
                lines[l].messages = kept
                if kept.isEmpty { turns.removeAll { $0 == l } }
            }
        }
    }

    private let state = Mutex(State())

    /// Every message buffered, set aside or not.
    var count: Int { state.withLock { $0.readyCount + $0.heldCount } }
    /// Messages the application can take now.
    var readyCount: Int { state.withLock { $0.readyCount } }

    func append(_ message: KafkaMessage) {
        let waiter = state.withLock { state -> CheckedContinuation<KafkaMessage?, Never>? in
            // A reader waits only when nothing is ready, so no other topic's turn comes first.
            if let waiter = state.waiter, !state.isHeld(message.topicPartition) {
                state.waiter = nil
                return waiter
            }
            state.push(message)
            return nil
        }
        waiter?.resume(returning: message)
    }

    /// Sets these partitions' messages aside, those buffered now and those that come, until
    /// `release` or `revoke`. Only for assigned partitions: a hold outlives nothing else.
    func hold(_ partitions: [TopicPartition]) {
        state.withLock { state in
            let added = Set(partitions.filter { state.held[$0] == nil })
            guard !added.isEmpty else { return }
            for p in added { state.held[p] = [] }
            var setAside: [KafkaMessage] = []
            state.remove(added) { setAside.append($0) }
            for message in setAside { state.held[message.topicPartition]?.append(message) }
            state.heldCount += setAside.count
        }
    }

    /// Puts these partitions' messages back in their topics' lines (older than any that come later).
    func release(_ partitions: [TopicPartition]) {
        let handOver = state.withLock { state -> (CheckedContinuation<KafkaMessage?, Never>, KafkaMessage)? in
            for p in partitions {
                guard let messages = state.held.removeValue(forKey: p) else { continue }
                state.heldCount -= messages.count
                for message in messages { state.push(message) }
            }
            guard let waiter = state.waiter, let message = state.popFirst() else { return nil }
            state.waiter = nil
            return (waiter, message)
        }
        if let (waiter, message) = handOver { waiter.resume(returning: message) }
    }

    /// Drops the messages of partitions that left, set aside or not, and forgets their pause.
    func revoke(_ partitions: Set<TopicPartition>) {
        state.withLock { state in
            state.remove(partitions) { _ in }
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

    /// The topics with messages ready to hand out.
    var readyTopics: Set<String> { waiting.topics }

    /// The topics with messages ready to hand out, and the partitions whose messages are set aside.
    var waiting: (topics: Set<String>, heldPartitions: Set<TopicPartition>) {
        state.withLock { state in (Set(state.turns.map { state.lines[$0].topic }), Set(state.held.keys)) }
    }

    var isFinished: Bool { state.withLock { $0.finished && $0.readyCount == 0 } }

    /// A reader is waiting in `next()` (for tests).
    var hasWaiter: Bool { state.withLock { $0.waiter != nil } }

    /// Takes what is ready now, up to `max`, without waiting.
    func drain(max: Int) -> [KafkaMessage] {
        state.withLock { state in
            var batch: [KafkaMessage] = []
            batch.reserveCapacity(Swift.min(max, state.readyCount))
            while batch.count < max, let item = state.popFirst() { batch.append(item) }
            return batch
        }
    }
}
