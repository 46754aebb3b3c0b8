import DequeModule

/// Keys of sends the hub accepted, each remembered until it is older than `window` seconds or
/// `capacity` newer ones came after it, with where it was learned: from this process, or read
/// back from the delivered-sends ledger (an earlier process, another instance, a replay).
/// At most `capacity` entries: 16 bytes in the queue and about 20 in the set each; a million, the
/// most `--dedupe-window` may hold, measured 35 MiB of RSS.
public struct RecentKeys: Sendable {
    public enum Origin: Sendable, Equatable { case thisProcess, ledger }

    private struct Entry {
        var key: Int
        /// Seconds since `epoch`: 4 bytes where a Double would take 8.
        var at: Int32
    }

    public let window: Double
    public let capacity: Int
    private var order: Deque<Entry> = []
    private var members: [Int: Origin] = [:]
    /// Times are kept relative to this, the first one seen (an Int32 of seconds spans 68 years).
    private var epoch: Double?

    public init(window: Double, capacity: Int) {
        self.window = window
        self.capacity = max(1, capacity)
    }

    public var count: Int { members.count }

    public func contains(_ key: Int) -> Origin? { members[key] }

    /// Remembers `key` as accepted at `at` (epoch seconds); one already remembered keeps its first
    /// time and origin. Forgets what the window or the capacity no longer holds.
    public mutating func insert(_ key: Int, at: Double, origin: Origin = .thisProcess) {
        let epoch = self.epoch ?? at
        self.epoch = epoch
        forget(before: at - window)
        guard members[key] == nil else { return }
        if members.count >= capacity, let oldest = order.popFirst() { members[oldest.key] = nil }
        members[key] = origin
        order.append(Entry(key: key, at: Int32(clamping: Int64((at - epoch).rounded(.down)))))
    }

    /// Forgets keys accepted before `cutoff` (epoch seconds). Entries are in the order they were
    /// remembered, which is their time order except for keys read back from the ledger after newer
    /// ones: those stay until the newer ones before them go (never longer than the capacity allows).
    public mutating func forget(before cutoff: Double) {
        guard let epoch else { return }
        while let first = order.first, epoch + Double(first.at) < cutoff {
            order.removeFirst()
            members[first.key] = nil
        }
    }
}
