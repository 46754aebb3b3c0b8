/// What one instance tells the others that send to the same hub, several times a second.
public struct QuotaReport: Sendable, Equatable, Codable {
    /// Unique per process: a restarted instance is a new one.
    public var instance: String
    /// The hub (namespace and hub name): instances of other groups sending to it share it too.
    public var hub: String
    /// Sends per second this instance had accepted, and started, lately.
    public var accepted: Double
    public var taken: Double
    /// Sends per second it could use: what it sends plus what waits for a token.
    public var demand: Double
    /// Of `demand`, the breaking sends waiting: asked for as the rate that sends them within
    /// `QuotaShare.urgentWithin`, and met before any instance's other sends. nil from an
    /// instance that does not say (an older version): none.
    public var urgent: Double?
    /// The hub's rate its pacer allows, every instance together; nil while unpaced.
    public var rate: Double?
    /// Sent on a clean stop: its share is given back at once rather than when its reports age.
    public var leaving: Bool
    /// Numbers the instance's own reports (`QuotaShare.stamp`), so that it knows which came back
    /// and times the exchange by it. nil from an older version.
    public var seq: Int?

    public init(
        instance: String,
        hub: String,
        accepted: Double,
        taken: Double,
        demand: Double,
        rate: Double?,
        leaving: Bool = false,
        urgent: Double? = nil,
        seq: Int? = nil
    ) {
        self.instance = instance
        self.hub = hub
        self.accepted = accepted
        self.taken = taken
        self.demand = demand
        self.rate = rate
        self.leaving = leaving
        self.urgent = urgent
        self.seq = seq
    }
}

/// The other instances sending to one hub, as their reports tell, and this instance's share of
/// the hub's rate: max-min fair by demand. An instance gets what it asks for if that is less than
/// an equal split of what the others leave; the instances that want more split the rest equally.
/// So an instance whose partitions run dry holds no share, and the busiest take what it gave
/// back at the next report, not after a climb. Breaking news comes first across instances as it
/// does within one: each instance's urgent ask (`QuotaReport.urgent`) is met before any other ask,
/// so breaking items on a quiet instance do not wait behind another's bulk backlog.
///
/// Every instance computes the same split from the same reports, its own as the others have it,
/// so the shares add up to the whole rate without anyone deciding; a report late by a round skews
/// one split by one round.
/// A value with an injected `now`, like the pacer.
public struct QuotaShare: Sendable, Equatable {
    public struct Configuration: Sendable, Equatable {
        /// A peer not heard from for this long has gone (a SIGKILL, a partitioned network).
        public var staleAfter: Duration = .seconds(2)
        /// Asks are met this much above what was used, so that an instance whose input grows
        /// is not held at what it sent last round.
        public var headroom = 1.25
        /// An exchange that has carried no report at all (not even this instance's own) for this
        /// long since the first split cannot be written or read: this instance paces alone, and
        /// knows it.
        public var silentAfter: Duration = .seconds(10)
        /// This instance's own report, heard back, stands for its ask in the split for this long
        /// (four reports' time): older, its side of the exchange lags, and its demand of the moment
        /// is nearer what the others have of it than a report they have long replaced.
        public var ownReportFor: Duration = .seconds(1)
        /// How long the others take to make room for this instance's breaking news: their next
        /// split after its report reaches them. Its own share counts its urgent ask only once the
        /// ask is this old, so that the group never sends more than the hub takes in between
        /// (a throttled breaking send waits out a `Retry-After`: a second, where this is less).
        public var urgentAfter: Duration = .milliseconds(400)
        public init() {}
    }

    private struct Peer: Sendable, Equatable {
        var report: QuotaReport
        var heardAt: Duration
        /// First heard (again, after its reports went stale).
        var since: Duration
    }

    /// An instance that said it was leaving: its sends of the last second still count in what
    /// the hub took (`HubPacer.Group.departedAccepted`), fading over `departedFor`. Its share is
    /// given back at once all the same.
    private struct Departed: Sendable, Equatable {
        var accepted: Double
        var at: Duration

        /// How much of its last second is still within the last second.
        func weight(now: Duration) -> Double { max(0, 1 - (now - at) / QuotaShare.departedFor) }
    }

    /// How long a leaving instance's sends count in what every instance had accepted: a second,
    /// the span a pacer's cut measures. A cut made just after a leave measured only those left
    /// (the one that left had taken half the hub until then), learnt too little, and climbed back
    /// over half a minute (`SharedQuotaTests`: 0.82x of the quota for 7 s; Tansu: 0.91-0.92x for 15 s).
    static let departedFor: Duration = .seconds(1)

    /// Breaking news waiting is asked for as the rate that sends it within this (an exchange's
    /// interval): a burst of 50 breaking items asks 200 sends a second, not 50.
    public static let urgentWithin: Duration = .milliseconds(250)

    public let instance: String
    public let hub: String
    public let configuration: Configuration
    private var peers: [String: Peer] = [:]
    private var departed: [String: Departed] = [:]
    /// When the exchange last carried this instance's own report back (it reads what the others
    /// write), any report, and when the first split was asked for.
    private var heardSelfAt: Duration?
    private var heardAnyAt: Duration?
    private var firstAskedAt: Duration?
    /// This instance's newest report heard back, and when: its ask as the others have it.
    private struct OwnReport: Sendable, Equatable {
        var report: QuotaReport
        var at: Duration
    }
    private var heardSelf: OwnReport?
    /// Since when this instance has asked for breaking news without a pause.
    private var urgentSince: Duration?
    /// This instance's own reports not yet heard back, by number, and when each was stamped;
    /// the time from a stamp to hearing it back is the exchange's latency (the others' reports
    /// take about as long: one topic, one cluster).
    private var nextSeq = 0
    private var stampedAt: [Int: Duration] = [:]
    private var latency: Duration?

    public init(instance: String, hub: String, configuration: Configuration = Configuration()) {
        self.instance = instance
        self.hub = hub
        self.configuration = configuration
    }

    /// Instances heard from lately, this one not included.
    public func others(now: Duration) -> Int {
        peers.values.count { now - $0.heardAt < configuration.staleAfter }
    }

    /// Numbers this instance's own report before it is published.
    public mutating func stamp(_ report: QuotaReport, now: Duration) -> QuotaReport {
        var report = report
        report.seq = nextSeq
        stampedAt[nextSeq] = now
        // Reports that never come back (the exchange lost them) are forgotten.
        stampedAt[nextSeq - 64] = nil
        nextSeq += 1
        return report
    }

    /// Takes a report; other hubs' are ignored, and its own tells that the exchange works and how
    /// long it takes.
    public mutating func heard(_ report: QuotaReport, now: Duration) {
        heardAnyAt = now
        guard report.hub == hub else { return }
        guard report.instance != instance else {
            heardSelfAt = now
            // One producer, one key: reports come back in order; an older one is not the newest ask.
            let newer = heardSelf?.report.seq.flatMap { held in report.seq.map { $0 >= held } } ?? true
            if newer { heardSelf = OwnReport(report: report, at: now) }
            if let seq = report.seq, let at = stampedAt.removeValue(forKey: seq) { latency = now - at }
            return
        }
        if report.leaving {
            peers[report.instance] = nil
            // Written an exchange's latency ago; a repeated last report does not start it again.
            if departed[report.instance] == nil {
                departed[report.instance] = Departed(accepted: report.accepted, at: now - (latency ?? .zero))
            }
        } else {
            departed[report.instance] = nil
            let since = peers[report.instance]?.since ?? now
            peers[report.instance] = Peer(report: report, heardAt: now, since: since)
        }
    }

    /// What the pacer needs to share the hub: this instance's share of `rate` (the hub's, every
    /// instance together; nil while unpaced: what they all start) given its own `demand` (of which
    /// `urgent` breaking sends wait), `accepted` and `taken` per second, and the others' measures.
    public mutating func group(
        demand: Double,
        urgent: Double = 0,
        accepted: Double,
        taken: Double,
        rate: Double?,
        now: Duration
    ) -> HubPacer.Group {
        peers = peers.filter { now - $0.value.heardAt < configuration.staleAfter }
        departed = departed.filter { $0.value.weight(now: now) > 0 }
        let gone = departed.values.reduce(0) { $0 + $1.accepted * $1.weight(now: now) }
        // Before the return for an instance alone: an ask that ends then must not leave its start.
        urgentSince = urgent > 0 ? urgentSince ?? now : nil
        let others = Array(peers.values.map(\.report))
        let known = isKnown(now: now)
        let paced = rate != nil
        guard !others.isEmpty else {
            return HubPacer.Group(departedAccepted: gone, known: known)
        }
        // Unpaced (or paused, when no split means anything): split what they all start.
        let rate = rate.flatMap { $0 > 0 ? $0 : nil } ?? (taken + others.reduce(0) { $0 + $1.taken })
        // Breaking news first: each urgent ask is the rate that sends what waits within
        // `urgentWithin`; this instance's own counts once the others have had time to make room.
        // Its own ask as the others have it (its last report heard back), not as it is now: split
        // with its demand of the moment beside their reports of the last round, an instance whose
        // items come in bursts held 0.10 of the hub between them while the others still left it
        // 0.50 (simulated beside a backlog, shares adding up to 0.60-0.84 and the hub at 0.80x).
        // Until the exchange carries its own reports, what it has is its own demand. (When an
        // urgent ask has just ended, its last report may still carry it: the others count it a
        // round longer than this instance does, which leaves the hub a round's room unused.)
        let heard = heardSelf.flatMap { now - $0.at < configuration.ownReportFor ? $0.report : nil }
        let ownDemand = heard?.demand ?? demand, ownUrgentAsk = heard.map { $0.urgent ?? 0 } ?? urgent
        let ownUrgent = urgentSince.map { now - $0 >= configuration.urgentAfter } == true ? ownUrgentAsk : 0
        let urgentAsks = ([ownUrgent] + others.map { $0.urgent ?? 0 }).map { $0 / Self.urgentWithin.inSeconds }
        let otherDemands = [ownDemand - ownUrgentAsk] + others.map { $0.demand - ($0.urgent ?? 0) }
        let otherAsks = otherDemands.map { max(0, $0) * configuration.headroom }
        let share = Self.allocate(rate, urgent: urgentAsks, rest: otherAsks)[0] / max(rate, 1e-9)
        // The rate of the busiest one with items waiting (for a token, a `Retry-After` or a free
        // slot: demand, a rate plus a count, above what it sends) has likely been tried, if it
        // has had more sends accepted a second than this instance lately; the rate of one with
        // nothing waiting (its partitions ran dry, or see a trickle) grew unchecked, and taken up
        // by the others it would be a throttle storm. So does the rate of one whose items come in
        // bursts, between throttles: taken up by a busier one while a burst waited, it held a
        // simulated pair at 0.57x of the quota. One not paced yet (a cold start, a join) has no
        // rate of its own, and any of theirs is nearer the hub's than none.
        let busiest = others.filter {
            $0.rate != nil && $0.demand >= $0.taken + 1 && (!paced || $0.accepted > accepted)
        }
        .max { ($0.accepted, $0.instance) < ($1.accepted, $1.instance) }
        return HubPacer.Group(
            share: share,
            othersAccepted: others.reduce(0) { $0 + $1.accepted },
            othersTaken: others.reduce(0) { $0 + $1.taken },
            othersRate: busiest?.rate,
            writtenSince: latency.flatMap { latency in peers.values.map(\.heardAt).min().map { $0 - latency } },
            newestSince: peers.values.map(\.since).max(),
            departedAccepted: gone,
            known: known
        )
    }

    /// The same for the report this instance has just published.
    public mutating func group(_ own: QuotaReport, now: Duration) -> HubPacer.Group {
        group(
            demand: own.demand,
            urgent: own.urgent ?? 0,
            accepted: own.accepted,
            taken: own.taken,
            rate: own.rate,
            now: now
        )
    }

    /// Who else sends to the hub is known: this instance's own report came back lately, or the
    /// exchange has carried nothing at all for `silentAfter` (it works in neither direction).
    private mutating func isKnown(now: Duration) -> Bool {
        let first = firstAskedAt ?? now
        firstAskedAt = first
        if let heardSelfAt, now - heardSelfAt < configuration.staleAfter { return true }
        let silent = heardAnyAt.map { now - $0 >= configuration.staleAfter } ?? true
        return silent && now - first >= configuration.silentAfter
    }

    /// The urgent asks met first, max-min fair among themselves if `total` cannot meet them all;
    /// then what is left split between the `rest` as `allocate(_:asks:)` does.
    public static func allocate(_ total: Double, urgent: [Double], rest: [Double]) -> [Double] {
        let urgentTotal = min(total, urgent.reduce(0, +))
        return zip(allocate(urgentTotal, asks: urgent), allocate(total - urgentTotal, asks: rest)).map(+)
    }

    /// Max-min fair split of `total` between `asks` (water-filling); what is left when every ask
    /// is met is split equally, so that any of them may grow into it at once.
    public static func allocate(_ total: Double, asks: [Double]) -> [Double] {
        guard !asks.isEmpty else { return [] }
        var given = [Double](repeating: 0, count: asks.count)
        var left = total
        var open = asks.indices.sorted { asks[$0] < asks[$1] }[...]
        while let smallest = open.first {
            let equal = left / Double(open.count)
            guard asks[smallest] <= equal else {
                for i in open { given[i] = equal }
                return given
            }
            given[smallest] = asks[smallest]
            left -= asks[smallest]
            open = open.dropFirst()
        }
        let spare = left / Double(asks.count)
        return given.map { $0 + spare }
    }
}
