/// The last `capacity` item ids seen, so that one process does not send an item twice
/// (an optimisation across re-reads, not a guarantee across instances).
public struct RecentIDs<ID: Hashable & Sendable>: Sendable {
    private var order: [ID?]
    private var members: Set<ID> = []
    private var next = 0

    public init(capacity: Int) {
        order = Array(repeating: nil, count: max(1, capacity))
    }

    /// True when `id` was not among the recent ones (and now is).
    public mutating func insert(_ id: ID) -> Bool {
        guard !members.contains(id) else { return false }
        if let evicted = order[next] { members.remove(evicted) }
        order[next] = id
        members.insert(id)
        next = (next + 1) % order.count
        return true
    }

    public func contains(_ id: ID) -> Bool { members.contains(id) }
}
