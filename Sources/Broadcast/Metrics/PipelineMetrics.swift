import Metrics
import News
import NotificationHubs

/// The pipeline's metrics, created once with fixed labels (never per message).
public struct PipelineMetrics: Sendable {
    public static let prefix = "hubcast_"
    public static let endToEndLabel = "hubcast_end_to_end_latency"

    public let consumed = Counter(label: "hubcast_consumed")
    public let deadLettered = Counter(label: "hubcast_dead_lettered")
    public let invalid = Counter(label: "hubcast_invalid")
    public let expired = Counter(label: "hubcast_expired")
    /// Items past their maximum age, or sends whose deadline passed while they waited or retried: dead-lettered.
    public let stale = Counter(label: "hubcast_stale")
    /// Items (or sends) skipped because this process sent them recently.
    public let duplicates = Counter(label: "hubcast_duplicates")
    /// Sends skipped because the delivered-sends ledger says the hub already accepted them (an
    /// earlier process, another instance, a replay).
    public let deduplicated = Counter(label: "hubcast_deduplicated")
    /// Accepted sends the ledger could not record (they may go again after a restart).
    public let ledgerUnrecorded = Meter(label: "hubcast_ledger_unrecorded")
    public let itemsDone = Counter(label: "hubcast_items_done")
    public let inFlight = Meter(label: "hubcast_in_flight")
    public let concurrency = Meter(label: "hubcast_concurrency")
    public let lag = Meter(label: "hubcast_lag")
    /// Each hub's metrics, by hub number (one, without a `hub` dimension, unless there are several).
    public let hubs: [HubMetrics]
    /// Revokes the engine did not answer in time: those partitions went with nothing committed.
    public let revokeTimeouts = Counter(label: "hubcast_rebalance_timeouts_total")
    /// Commits of a revoke's finished work the broker refused: the next owner sends that work again.
    public let revokeCommitFailures = Counter(label: "hubcast_revoke_commit_failures_total")
    private let rebalanceCounters = Rebalance.allCases.map {
        Counter(label: "hubcast_rebalances_total", dimensions: [("kind", "\($0)")])
    }

    public enum Rebalance: Int, CaseIterable, Sendable { case assigned, revoked }

    /// What counts a send skipped as already delivered, by where that was learned.
    public func skipped(_ origin: RecentKeys.Origin) -> Counter {
        origin == .ledger ? deduplicated : duplicates
    }

    /// Partitions given to this instance (`assigned`) or taken from it (`revoked`), one per rebalance callback.
    public func rebalances(_ kind: Rebalance) -> Counter { rebalanceCounters[kind.rawValue] }
    /// Kafka timestamp → hub accepted, one timer per (priority, category): indexed by the
    /// priority's raw value, then the category's place in `categoryIndex`.
    private let endToEnd: [[Timer]]
    private let categoryIndex: [String: Int]
    /// Sends accepted later than their priority's target (`--slo`), by priority, indexed by its raw value.
    private let sloMissed: [Counter]

    /// End-to-end latency gets one timer per (priority, category), so one sample per send serves
    /// both views: per category (summed over priorities) and per priority (summed over categories).
    /// `hubs`: the names of the hubs sent to, when there are several (each hub's metrics then
    /// carry its name as the `hub` dimension).
    public init(categories: [String], hubs: [String] = []) {
        self.hubs = hubs.count > 1 ? hubs.map { HubMetrics(hub: $0) } : [HubMetrics(hub: nil)]
        categoryIndex = Dictionary(categories.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        endToEnd = Priority.allCases.map { priority in
            categories.map {
                Timer(label: Self.endToEndLabel, dimensions: [("category", $0), ("priority", priority.name)])
            }
        }
        sloMissed = Priority.allCases.map { Counter(label: "hubcast_slo_missed", dimensions: [("priority", $0.name)]) }
    }

    /// Hub number `hub`'s metrics; a number they were not made for counts as the first hub's.
    public func hub(_ hub: Int) -> HubMetrics { hubs[hubs.indices.contains(hub) ? hub : 0] }

    /// `target`: the priority's time-to-hub target in milliseconds, if it has one.
    func recordEndToEnd(category: String, priority: Priority, milliseconds: Int64, target: Int64?) {
        if let index = categoryIndex[category] { endToEnd[priority.rawValue][index].recordMilliseconds(milliseconds) }
        if let target, milliseconds > target { sloMissed[priority.rawValue].increment() }
    }
}

/// What is measured of one hub's sends, named by a `hub` dimension when there are several hubs.
public struct HubMetrics: Sendable {
    /// The hub's name in the `hub` dimension; nil: the only hub, not named.
    public let name: String?
    /// Sends the hub accepted, by platform (`template` first, then `NativePlatform.allCases`).
    private let sentCounters: [Counter]
    public let failed: Counter
    /// Accepted sends the hub keeps until their `sendAt` (counted in `sent` too).
    public let scheduled: Counter
    public let retried: Counter
    public let throttled: Counter
    /// 1 while the hub takes sends, 0 while it is held as unavailable (credentials, TLS, no answer).
    public let hubAvailable: Meter
    /// Sends per second the pacer allows the hub now; 0 while unpaced (the hub has not throttled).
    public let paceRate: Meter
    /// The hub's rate as this instance's pacer learnt it, every instance together; 0 while unpaced.
    public let paceHubRate: Meter
    /// This instance's share of the hub's rate (1 alone).
    public let paceShare: Meter
    /// Sends per second this instance could use: what it sends plus what waits (its weight in the split).
    public let paceDemand: Meter
    /// Other instances sending to the same hub, heard from lately.
    public let quotaPeers: Meter
    public let sasTokensMinted: Meter
    public let sendLatency: Timer

    init(hub: String?) {
        name = hub
        let named: [(String, String)] = hub.map { [("hub", $0)] } ?? []
        sentCounters = (["template"] + NativePlatform.allCases.map(\.rawValue)).map {
            Counter(label: "hubcast_sent", dimensions: named + [("platform", $0)])
        }
        failed = Counter(label: "hubcast_failed", dimensions: named)
        scheduled = Counter(label: "hubcast_scheduled", dimensions: named)
        retried = Counter(label: "hubcast_retried", dimensions: named)
        throttled = Counter(label: "hubcast_throttled", dimensions: named)
        hubAvailable = Meter(label: "hubcast_hub_available", dimensions: named)
        paceRate = Meter(label: "hubcast_pace_rate", dimensions: named)
        paceHubRate = Meter(label: "hubcast_pace_hub_rate", dimensions: named)
        paceShare = Meter(label: "hubcast_pace_share", dimensions: named)
        paceDemand = Meter(label: "hubcast_pace_demand", dimensions: named)
        quotaPeers = Meter(label: "hubcast_quota_peers", dimensions: named)
        sasTokensMinted = Meter(label: "hubcast_sas_tokens_minted", dimensions: named)
        sendLatency = Timer(label: "hubcast_send_latency", dimensions: named)
        hubAvailable.set(1)
        paceShare.set(1)
    }

    /// The accepted sends of a platform; nil: template sends.
    public func sent(_ platform: NativePlatform?) -> Counter {
        // Per send: a switch, where `allCases` would build an array each time.
        switch platform {
        case nil: sentCounters[0]
        case .apple?: sentCounters[1]
        case .fcmv1?: sentCounters[2]
        case .windows?: sentCounters[3]
        }
    }
}
