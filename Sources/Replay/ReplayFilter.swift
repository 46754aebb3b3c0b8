/// Which dead-letter records a replay takes.
public struct ReplayFilter: Sendable {
    public var since: Double?
    public var until: Double?
    public var categories: Set<String> = []
    public var reasons: Set<String> = []
    public var statuses: Set<Int> = []
    public var ids: Set<String> = []
    /// The names of the hubs the sends failed at (a run with `--routes` names them).
    public var hubs: Set<String> = []

    public init() {}

    public func accepts(_ r: ReplayRecord) -> Bool {
        if let since, r.deadLetteredAt < since { return false }
        if let until, r.deadLetteredAt > until { return false }
        if !categories.isEmpty, !categories.contains(r.category ?? "") { return false }
        if !reasons.isEmpty, !reasons.contains(r.reason) { return false }
        if !statuses.isEmpty, !statuses.contains(r.status ?? -1) { return false }
        if !ids.isEmpty, !ids.contains(r.itemID ?? "") { return false }
        if !hubs.isEmpty, !hubs.contains(r.hub ?? "") { return false }
        return true
    }
}
