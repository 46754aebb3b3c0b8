import Dispatch
import Kafka
import Synchronization

/// Lets the source's revoke callback, which runs on its own thread and must not return before
/// the leaving partitions' work is done, wait for the engine's `completeRevoke`.
final class RevokeRendezvous: Sendable {
    /// One blocked revoke; the mutex below guards `offsets`.
    private final class Waiter: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        var offsets: [TopicPartitionOffset] = []
    }

    private struct State {
        var nextID = 0
        var waiting: [Int: Waiter] = [:]
        /// Set once the run is over: revokes answer at once with what it left uncommitted.
        var leftover: [TopicPartitionOffset]?
    }

    private let state = Mutex(State())
    private let timeout: Duration

    init(timeout: Duration) {
        self.timeout = timeout
    }

    /// Blocks the calling thread (never a Swift task) until the engine completes this revoke;
    /// returns the offsets to commit before the partitions go.
    func revoke(post: (Int) -> Void) -> [TopicPartitionOffset] {
        let waiter = Waiter()
        let registered = state.withLock { s -> Result<Int, Never>? in
            if let leftover = s.leftover {
                waiter.offsets = leftover
                return nil
            }
            s.nextID += 1
            s.waiting[s.nextID] = waiter
            return .success(s.nextID)
        }
        guard case .success(let id) = registered else { return state.withLock { _ in waiter.offsets } }
        post(id)
        let answered = waiter.done.wait(timeout: .now() + .milliseconds(Int(timeout.inMilliseconds))) == .success
        return state.withLock { s in
            s.waiting[id] = nil
            return answered ? waiter.offsets : []
        }
    }

    func complete(_ id: Int, commit offsets: [TopicPartitionOffset]) {
        let waiter = state.withLock { s -> Waiter? in
            guard let waiter = s.waiting.removeValue(forKey: id) else { return nil }
            waiter.offsets = offsets
            return waiter
        }
        waiter?.done.signal()
    }

    /// The run is over: pending and later revokes get `leftover` (what the final commit could not store).
    func close(leftover: [TopicPartitionOffset]) {
        let waiters = state.withLock { s -> [Waiter] in
            s.leftover = leftover
            defer { s.waiting.removeAll() }
            return s.waiting.values.map { waiter in
                waiter.offsets = []
                return waiter
            }
        }
        for waiter in waiters { waiter.done.signal() }
    }
}
