import Dispatch
import Kafka
import Synchronization

/// Lets the source's revoke callback, which runs on its own thread and must not return before
/// the leaving partitions' work is done, wait for the engine's `completeRevoke`.
///
/// A revoke the engine does not complete within `timeout` lets the partitions go with nothing
/// committed: `gaveUp` hears which, and, should the engine complete it later, `answeredLate` hears
/// the offsets that were not committed (the next owner sends that work again).
final class RevokeRendezvous: Sendable {
    /// One blocked revoke. Its offsets are set under the rendezvous's lock, then its semaphore
    /// signalled; a lock of its own lets the compiler check that.
    private final class Waiter: Sendable {
        // librdkafka's rebalance callback must not return before the commit: it blocks here.
        let done = DispatchSemaphore(value: 0)
        let offsets = Mutex<[TopicPartitionOffset]>([])
    }

    private struct State {
        var nextID = 0
        var waiting: [Int: Waiter] = [:]
        /// Revokes that timed out, until the engine completes them (at most a few: one per rebalance).
        var gaveUp: Set<Int> = []
        /// Set once the run is over: revokes answer at once with what it left uncommitted.
        var leftover: [TopicPartitionOffset]?
    }

    private let state = Mutex(State())
    private let timeout: Duration
    private let gaveUp: @Sendable ([TopicPartition]) -> Void
    private let answeredLate: @Sendable ([TopicPartitionOffset]) -> Void

    init(
        timeout: Duration,
        gaveUp: @escaping @Sendable ([TopicPartition]) -> Void = { _ in },
        answeredLate: @escaping @Sendable ([TopicPartitionOffset]) -> Void = { _ in }
    ) {
        self.timeout = timeout
        self.gaveUp = gaveUp
        self.answeredLate = answeredLate
    }

    /// Blocks the calling thread (never a Swift task) until the engine completes this revoke of
    /// `partitions`; returns the offsets to commit before the partitions go.
    func revoke(_ partitions: [TopicPartition], post: (Int) -> Void) -> [TopicPartitionOffset] {
        let waiter = Waiter()
        let registered = state.withLock { s -> Result<Int, Never>? in
            if let leftover = s.leftover {
                waiter.offsets.withLock { $0 = leftover }
                return nil
            }
            s.nextID += 1
            s.waiting[s.nextID] = waiter
            return .success(s.nextID)
        }
        guard case .success(let id) = registered else { return waiter.offsets.withLock { $0 } }
        post(id)
        let answered = waiter.done.wait(timeout: .now() + .milliseconds(Int(timeout.inMilliseconds))) == .success
        let offsets = state.withLock { s -> [TopicPartitionOffset]? in
            // Completed between the wait's end and this lock: the answer is still in time.
            guard answered || s.waiting[id] == nil else {
                s.waiting[id] = nil
                s.gaveUp.insert(id)
                return nil
            }
            s.waiting[id] = nil
            return waiter.offsets.withLock { $0 }
        }
        guard let offsets else {
            gaveUp(partitions)
            return []
        }
        return offsets
    }

    func complete(_ id: Int, commit offsets: [TopicPartitionOffset]) {
        let (waiter, late) = state.withLock { s -> (Waiter?, Bool) in
            if s.gaveUp.remove(id) != nil { return (nil, true) }
            guard let waiter = s.waiting.removeValue(forKey: id) else { return (nil, false) }
            waiter.offsets.withLock { $0 = offsets }
            return (waiter, false)
        }
        if late, !offsets.isEmpty { answeredLate(offsets) }
        waiter?.done.signal()
    }

    /// The run is over: pending and later revokes get `leftover` (what the final commit could not store).
    func close(leftover: [TopicPartitionOffset]) {
        let waiters = state.withLock { s -> [Waiter] in
            s.leftover = leftover
            defer { s.waiting.removeAll() }
            return s.waiting.values.map { waiter in
                waiter.offsets.withLock { $0 = [] }
                return waiter
            }
        }
        for waiter in waiters { waiter.done.signal() }
    }
}
