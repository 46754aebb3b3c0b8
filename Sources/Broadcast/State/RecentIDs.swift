/// The last `capacity` item ids seen, so that one process does not send an item twice
/// (an optimisation across re-reads, not a guarantee across instances).
public struct RecentIDs: Sendable {
    private var order: [String?]
    private var members: Set<String> = []
    private var next = 0

    public init(capacity: Int) {
        order = Array(repeating: nil, count: max(1, capacity))
    }

    /// True when `id` was not among the recent ones (and now is).
    public mutating func insert(_ id: String) -> Bool {
        guard !members.contains(id) else { return false }
        if let evicted = order[next] { members.remove(evicted) }
        order[next] = id
        members.insert(id)
        next = (next + 1) % order.count
        return true
    }

    public func contains(_ id: String) -> Bool { members.contains(id) }
}
