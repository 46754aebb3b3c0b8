import Synchronization

/// What a replay did, for the progress line, the summary and the dry-run report.
public struct ReplayCounts: Sendable {
    public var read = 0
    public var corrupt = 0
    public var filtered = 0
    public var stillInvalid = 0
    public var expired = 0
    /// Records whose hub the routes do not name, nor their item's tenant or category.
    public var noHub = 0
    public var duplicates = 0
    /// Sends the delivered-sends ledger says the hub already accepted (a run, an earlier replay).
    public var deduplicated = 0
    public var sent = 0
    public var failed = 0
    /// Dry run: sends that would go out, per category and per reason.
    public var wouldSendByCategory: [String: Int] = [:]
    public var wouldSendByReason: [String: Int] = [:]
    /// ...and per hub, with several.
    public var wouldSendByHub: [String: Int] = [:]

    public var skipped: Int { corrupt + filtered + stillInvalid + expired + noHub + duplicates + deduplicated }
}
