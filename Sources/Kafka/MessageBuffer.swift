import Synchronization

/// Hands messages from the poll thread to the one task that iterates them.
final class MessageBuffer: Sendable {
    private struct State {
        var items: [KafkaMessage] = []
        var head = 0
        var waiter: CheckedContinuation<KafkaMessage?, Never>?
        var finished = false

        var count: Int { items.count - head }

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
    }

    private let state = Mutex(State())

    var count: Int { state.withLock { $0.count } }

    func append(_ message: KafkaMessage) {
        let waiter = state.withLock { state -> CheckedContinuation<KafkaMessage?, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.items.append(message)
            return nil
        }
        waiter?.resume(returning: message)
    }

    /// Drops buffered messages that must no longer be delivered (revoked partitions).
    func removeAll(where shouldRemove: (KafkaMessage) -> Bool) {
        state.withLock { state in
            state.items.removeFirst(state.head)
            state.head = 0
            state.items.removeAll(where: shouldRemove)
        }
    }

    /// Ends the sequence once the buffered messages are taken.
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

    var isFinished: Bool { state.withLock { $0.finished && $0.count == 0 } }

    /// Takes what is buffered now, up to `max`, without waiting.
    func drain(max: Int) -> [KafkaMessage] {
        state.withLock { state in
            var batch: [KafkaMessage] = []
            while batch.count < max, let item = state.popFirst() { batch.append(item) }
            return batch
        }
    }
}
