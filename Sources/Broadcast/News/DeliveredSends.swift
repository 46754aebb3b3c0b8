import Synchronization

/// The (item, audience) pairs this process delivered recently, so that an item read again (a
/// rebalance, a restart of the partition) does not go to the same audience twice. Marked on
/// delivery, never before: an item whose send never started is not mistaken for a duplicate.
/// An optimisation within one process, not a guarantee across instances.
public final class DeliveredSends: Sendable {
    private let window: Mutex<RecentIDs<Int>>

    public init(capacity: Int) {
        window = Mutex(RecentIDs(capacity: capacity))
    }

    func delivered(_ key: Int) {
        window.withLock { _ = $0.insert(key) }
    }

    func contains(_ key: Int) -> Bool {
        window.withLock { $0.contains(key) }
    }
}
