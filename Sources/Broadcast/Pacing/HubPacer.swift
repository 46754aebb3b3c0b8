import Foundation
import Kafka

/// Paces the sends to one hub (namespace) to its quota, which nobody tells us: a token bucket whose
/// rate is learnt from throttling, and that tells a quota from throttling that has nothing to do
/// with our rate.
///
/// A quota refuses the excess rather than slowing accepted sends, and a send takes half a
/// millisecond, so neither latency nor a concurrency limit says anything: the signal is throttled
/// versus accepted. But a hub also throttles requests that are not over our quota (a namespace
/// shared with other senders, the service's own load): a fixed share, whatever the rate. Cutting
/// the rate for those buys nothing, and cutting it again and again collapses it.
///
/// - A throttled send always waits its own `Retry-After` (the engine holds it); the pacer decides
///   what the other sends do.
/// - Until the first throttle (and without `maxRate`) nothing is paced: an unthrottled hub gets
///   everything the concurrency limit allows.
/// - The first throttle of a send started at the current rate cuts the rate once (a new `epoch`):
///   from a spell of half a second or more, to the accepted rate of its last second, then back up
///   along a cubic (RFC 8312's shape) to just under it (`plateau`), where it stays for long (not
///   when the measure is likely low: measured while the rate still grew, or within a second of
///   the cut before with sends going on throughout; then briefly), then ever faster past it, and
///   doubling beyond `probeAbove` × the level (the quota has risen). From a shorter spell (a
///   cold start's burst allowance) the rate at least halves and probes upward by doubling.
/// - The answers of the sends started at the cut rate judge the cut, once there are enough to
///   expect four throttles at the share before it. The share as high as before although the rate
///   fell (a quota would have shed the excess): the throttling is sporadic; the rate goes back to
///   what it was before the first of these cuts, and throttles at that share or a little above are
///   not cut for again: alone, while they keep showing (the share is forgotten over
///   `sporadicHalfLife` once they stop); beside other instances, for `sporadicTrust` and longer
///   as verdicts confirm it, then judged again (their moves can make a quota look sporadic). Few
///   throttled: it was a quota, and the rate stays cut. Throttled as a quota still exceeded would
///   be: cut again and judge again.
/// - A hundred sends accepted in a row while a sporadic share was known: the storm is over, and a
///   rate measured under it is too low; the rate doubles upward (not another instance's rate
///   taken since the verdict: never sent under it).
/// - Nearly every send of an epoch throttled (`severeShare`): the hub is refusing us, not sampling
///   us. Every send waits the `Retry-After`, and the rate is cut.
/// - Sends throttled that were started before the last cut do not cut again: they speak of the
///   rate that was already cut.
/// - After a quiet spell of the whole hub, sending resumes at a rate the hub has taken (up to the
///   estimate), not at what the rate grew to untried meanwhile (`resumeAfterQuiet`).
///
/// Several instances sending to one hub share its quota (`Group`): the rate learnt is the hub's,
/// measured from what every instance had accepted, and this instance sends its share of it.
/// Alone, the share is 1 and nothing else changes. A ceiling learnt before the exchange told who
/// else sends (the first seconds of a start) measured this instance's part only: it is raised,
/// once, to what all had accepted (`decideRateLearntUnheard`).
///
/// A value: no clock, no lock; `now` is a time since any fixed origin, as in `PipelineEngine`.
/// Simulated against a token-bucket hub, a sporadically throttling one and both in `HubPacerTests`,
/// and several pacers sharing one hub in `SharedQuotaTests`.
public struct HubPacer: Sendable, Equatable {
    public struct Configuration: Sendable, Equatable {
        /// A known quota in sends per second: never exceeded. nil: learnt from throttling alone.
        public var maxRate: Double?
        /// Where the rate restarts after a throttle, as a share of the ceiling.
        public var decrease = 0.9
        /// Where it levels off, as a share of the ceiling.
        public var plateau = 0.95
        /// How long it takes to climb from the restart to the level.
        public var recovery: Duration = .seconds(3)
        /// How long it then takes to grow `probeAbove` × the level, probing for a risen quota.
        public var probing: Duration = .seconds(30)
        /// The same after a cut while doubling, after a second the rate still grew through (the
        /// second measured then was climbing, so its accepted rate is below the quota) or within
        /// a second of the cut before with sends going on throughout (low by its first round
        /// trip), or while sharing the hub with other instances.
        public var probingAfterDoubling: Duration = .seconds(5)
        /// Past this multiple of the level without a throttle, the quota has moved: double.
        public var probeAbove = 1.25
        /// While doubling, how often.
        public var doubling: Duration = .seconds(1)
        /// The rate never falls below this, so that a hub throttling everything is still probed.
        public var minRate = 1.0
        /// Tokens saved up at most, as time at the current rate: the burst after an idle spell.
        public var burst: Duration = .milliseconds(10)
        /// The wait after a throttle that gave no `Retry-After`.
        public var defaultPause: Duration = .seconds(1)
        /// A spell shorter than this measured the hub's burst allowance more than its quota.
        public var reliableSpell: Duration = .milliseconds(500)
        /// A spell that accepted fewer sends than this measured too little to stand for the quota:
        /// probe instead of creeping up from it for half a minute.
        public var reliableCount = 20.0
        /// Answers of the sends started after a cut that judge it, at least; more when the share
        /// throttled before the cut was small (enough to expect four throttles), up to `judgedAtMost`.
        public var judgedAfter = 20
        public var judgedAtMost = 400
        /// An epoch shorter than this has not measured its rates: a cut is judged (and cut again
        /// for) no sooner, unless the hub refuses nearly everything.
        public var judgedSpell: Duration = .milliseconds(100)
        /// At least this share of an epoch's answers throttled: the hub refuses nearly everything,
        /// and every send waits for its `Retry-After`.
        public var severeShare = 0.8
        /// No send for this long is a quiet spell: a measure starts after it.
        public var quietGap: Duration = .milliseconds(250)
        /// A verdict of sporadic throttling is trusted this long at first, twice as long after
        /// each verdict that confirms it, up to `sporadicTrustAtMost`; a throttle after that is
        /// judged afresh (a cut and its judgement, a few dozen sends). A quota taken for sporadic
        /// throttling (the other instances moved the hub's rate while this one judged its cut)
        /// would otherwise confirm itself: twice the quota throttles half the sends, whatever
        /// share was learnt.
        public var sporadicTrust: Duration = .seconds(1)
        public var sporadicTrustAtMost: Duration = .seconds(8)
        /// A learnt share of sporadic throttles counts half as much after this long (in the
        /// margins of a judgement; a throttle is let pass only while the verdict is trusted).
        public var sporadicHalfLife: Duration = .seconds(30)

        public init() {}
    }

    /// How the rate evolves.
    public enum Mode: Sendable, Equatable {
        /// No throttle yet, no configured rate: no pacing.
        case unpaced
        /// A known quota (`maxRate`) and no throttle heard: paced at it.
        case fixed
        /// From `decrease` × `ceiling` to `plateau` × `ceiling` along the cubic from `since`, then past it.
        case recovering(ceiling: Double, since: Duration)
        /// Doubling from `from` at `since`, until throttled.
        case probing(from: Double, since: Duration)
    }

    /// What the other instances sending to this hub said, as the pacer needs it.
    public struct Group: Sendable, Equatable {
        /// This instance's share of the hub's rate, in (0, 1]: 1 alone.
        public var share = 1.0
        /// Sends per second the others had accepted and started, lately.
        public var othersAccepted = 0.0
        public var othersTaken = 0.0
        /// The hub's rate the busiest of the others with items waiting paces at, if it has had
        /// more sends accepted a second than this paced instance (nil: none such). An instance
        /// that never heard a throttle starts there rather than cold, one probing upward goes on
        /// from there if it is higher (the busiest reached it without a throttle), and so does
        /// one that learnt its rate before it heard the others; one that sends nothing takes
        /// it if lower (`followBusiest`).
        public var othersRate: Double?
        /// The others' reports behind these figures were all written after this (by this
        /// instance's clock: when each was heard, less the exchange's latency as this instance's
        /// own reports measure it); nil alone, or while the latency is not known.
        public var writtenSince: Duration?
        /// When the newest of the others was first heard; nil alone.
        public var newestSince: Duration?
        /// Sends per second of instances that left within the last second, for the part of it
        /// they were still sending: counted in what the hub took at a cut, and nowhere else
        /// (they hold no share and are not judged beside).
        public var departedAccepted: Double
        /// What the hub took from the others over its last second, as a cut measures it: those
        /// still sending and those that left within it.
        var othersLastSecond: Double { othersAccepted + departedAccepted }
        /// Who else sends to the hub is known: the exchange carried this instance's own report
        /// back. Until then one that heard nobody may still not be alone (the exchange's consumer
        /// takes seconds to join), and its verdicts are judged as a group member's.
        public var known: Bool

        public init(
            share: Double = 1,
            othersAccepted: Double = 0,
            othersTaken: Double = 0,
            othersRate: Double? = nil,
            writtenSince: Duration? = nil,
            newestSince: Duration? = nil,
            departedAccepted: Double = 0,
            known: Bool = true
        ) {
            self.known = known
            self.departedAccepted = departedAccepted
            self.writtenSince = writtenSince
            self.newestSince = newestSince
            self.share = share
            self.othersAccepted = othersAccepted
            self.othersTaken = othersTaken
            self.othersRate = othersRate
        }
    }

    /// The sends started in one epoch and what became of them.
    private struct EpochSends: Sendable, Equatable {
        var startedAt: Duration?
        var endedAt: Duration?
        /// Started by a cut (not a pause, a verdict or the first report heard); so paced too.
        var followsCut = false
        /// Paced (not a cold start's or a `maxRate`-free burst): its rate means something.
        var paced = false
        /// The rate paced at when it ended.
        var endRate: Double?
        /// Sends started, each counted as the hub-wide sends it stands for (1 / share).
        var taken = 0.0
        var answered = 0
        var throttled = 0
        /// The same over about the last 100 to 200 answers: halved whenever they pass 200.
        var recentAnswered = 0.0
        var recentThrottled = 0.0

        var share: Double { answered > 0 ? Double(throttled) / Double(answered) : 0 }
        var recentShare: Double { recentAnswered > 0 ? recentThrottled / recentAnswered : 0 }

        mutating func answer(throttled isThrottled: Bool) {
            answered += 1
            recentAnswered += 1
            if isThrottled {
                throttled += 1
                recentThrottled += 1
            }
            if recentAnswered >= 200 {
                recentAnswered /= 2
                recentThrottled /= 2
            }
        }
        var accepted: Double { Double(answered - throttled) }

        func duration(now: Duration) -> Duration {
            startedAt.map { (endedAt ?? now) - $0 } ?? .zero
        }

        /// Sends started per second.
        func sendRate(now: Duration) -> Double {
            taken / max(duration(now: now), .milliseconds(1)).inSeconds
        }
    }

    /// A severe throttle's cut, decided when its pause is over (and the answers of the sends then
    /// in flight are in).
    private struct Decrease: Sendable, Equatable {
        /// The rate paced at when throttled.
        var pacedRate: Double
        var spell: Duration
        /// Accepted per second over the last second of the spell, measured when throttled.
        var lastSecond: Double
        /// Nobody else was heard then (see `learntUnheard`): the measure is this instance's part.
        var unheard: Bool
    }

    /// What the rate was before the first of a run of cuts: where a sporadic verdict returns.
    private struct Before: Sendable, Equatable {
        var mode: Mode
        var lastCeiling: Double?
        var provenRate: Double
        var provenSecond: Double
        var probingSpan: Duration
        var learntUnheard: Bool
    }

    public let configuration: Configuration
    public private(set) var mode: Mode
    /// Incremented by every cut; a send carries the epoch it was started in.
    public private(set) var epoch = 0
    /// Nothing is sent before this: a `Retry-After` while the hub refuses nearly everything.
    public private(set) var pausedUntil: Duration = .zero
    /// The share of sends the hub throttles whatever the rate, as last judged, and when.
    public private(set) var sporadicShare = 0.0
    private var sporadicJudgedAt: Duration = .zero
    private var sporadicTrustedFor: Duration = .zero
    public private(set) var group = Group()
    private var current = EpochSends()
    private var previous: EpochSends?
    /// Set while the current epoch's sends judge a cut.
    private var judging: Before?
    private var decrease: Decrease?
    /// When sending last resumed after a pause (or first began), and what was accepted since.
    private var spellStart: Duration?
    /// When sends last began again after a quiet gap, and the last send: a second measured
    /// across a quiet spell would stand for a quota it never met.
    private var busySince: Duration?
    private var lastTakenAt: Duration?
    private var spellAccepted = 0.0
    private var tokens = 1.0
    private var refilledAt: Duration?
    private var accepted = RateWindow()
    private var taken = RateWindow()
    /// The last estimate of the quota, for the cap on a rate that was never tried.
    private var lastCeiling: Double?
    /// How long the cubic takes past its level: short when the estimate is known to be low.
    private var probingSpan: Duration
    /// The last ceiling was measured while no other instance was heard.
    private var learntAlone = false
    /// The rate was last decided before the exchange ever told who else sends to the hub (nobody
    /// heard, and this instance's own reports never back yet): from its own part of the hub's
    /// traffic, which may be any part of it. Decided once (`decideRateLearntUnheard`).
    private var learntUnheard = false
    /// The exchange has told who else sends at least once: a rate decided since is never taken for
    /// one learnt unheard (own reports that stop coming back for a while do not make it so).
    private var everKnown = false
    /// The most accepted within one second since the rate was last decided, counted over the
    /// second (`provenRate` divides a burst's first milliseconds by their length: a bound for
    /// untried rates, but 2,500-4,700 a second at a quota of 1,000, simulated).
    private var provenSecond = 0.0
    /// When the rate was last decided (a cut, a pause's, or the busiest's followed).
    private var decidedAt: Duration = .zero
    /// The rate was last taken from the busiest instance's, after this one had sent nothing for a
    /// second: any growth since is untried (`followBusiest`).
    private var followed = false
    /// When the rate in force was last taken from another instance's (the busiest's, followed or
    /// taken up) rather than measured by this instance's sends; nil after a cut. A sporadic
    /// verdict that restores an earlier rate leaves it: the verdict is later.
    private var adoptedAt: Duration?
    /// The most accepted in a second since the rate was last decided: a rate the hub has taken,
    /// so also one that may be resumed at once after a quiet spell.
    private var provenRate = 0.0
    /// A cut measured in a group, to be measured again from the others' reports written after it.
    private var remeasure: Remeasure?

    /// The others' part of a group's measure is their last reports, written up to half a second
    /// before this instance's own second ends. While the rates climb (a cold start, a join) that
    /// part is low, and the level the rate recovers to with it: the group then sends below the
    /// quota, unthrottled, until its probing finds the rest. Reports written after the cut cover
    /// the others' seconds up to it.
    private struct Remeasure: Sendable, Equatable {
        var at: Duration
        /// What the hub took of the rate throttled: the remeasured level never exceeds it.
        var cap: Double
        /// This instance's own part of the measure, and what the sporadic share made of the sum.
        var own: Double
        var sporadicFactor: Double
    }
    /// A remeasure not made by then speaks of rates that have moved since: dropped.
    private static let remeasureWithin: Duration = .seconds(3)

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        mode = configuration.maxRate == nil ? .unpaced : .fixed
        probingSpan = configuration.probing
    }

    /// Sends per second this instance may start now: its share of the hub's rate; nil when
    /// unpaced, zero while paused.
    public func rate(now: Duration) -> Double? {
        hubRate(now: now).map { $0 == 0 ? 0 : max(configuration.minRate, $0 * group.share) }
    }

    /// Sends per second the hub is paced to, every instance together; nil when unpaced, zero
    /// while paused.
    public func hubRate(now: Duration) -> Double? {
        if now < pausedUntil { return 0 }
        let learnt: Double
        switch mode {
        case .unpaced, .fixed:
            return configuration.maxRate
        case .recovering(let ceiling, let since):
            learnt = cubic(ceiling: ceiling, at: now - since)
        case .probing(let from, let since):
            learnt = from * pow(2, min(30, max(0, (now - since) / configuration.doubling)))
        }
        // A rate that grew while little was sent was never tried: it may grow past twice what
        // is sent only up to the probing bound of the last estimate or of what the hub has taken
        // since (botocore caps it likewise); after a quiet spell of this instance alone a burst
        // starts there (of the whole hub's, see `resumeAfterQuiet`).
        let known = max(lastCeiling ?? 0, provenRate)
        let tried = max(known * configuration.plateau * configuration.probeAbove, 2 * takenPerSecond(now: now))
        var rate = min(learnt, tried)
        if let maximum = configuration.maxRate { rate = min(rate, maximum) }
        return max(rate, configuration.minRate)
    }

    /// Takes a token if one is there: the epoch to report this send's answer with, or nil (ask
    /// again at `nextTokenAt`).
    public mutating func take(now: Duration) -> Int? {
        guard now >= pausedUntil else { return nil }
        // Asked before `advance`, which may restart the mode at `now` (a pause's cut decided, the
        // cubic turned into doubling): a rate that grew through the quiet spell would then look
        // freshly decided.
        let grewIn = modeGrownWhileQuiet(now: now)
        advance(now: now)
        if spellStart == nil { spellStart = now }
        if let rate = rate(now: now) {
            refill(rate: rate, now: now)
            guard tokens >= 1 else { return nil }
            tokens -= 1
        }
        if lastTakenAt.map({ now - $0 > configuration.quietGap }) ?? true {
            busySince = now
            if let grewIn { resumeAfterQuiet(now: now, grewIn: grewIn) }
            followed = false
        }
        lastTakenAt = now
        taken.add(now: now)
        if current.startedAt == nil {
            current.startedAt = now
            current.paced = mode != .unpaced
        }
        current.taken += weight
        return epoch
    }

    /// When a `take` would next succeed; nil if one would now, or pacing is off.
    public func nextTokenAt(now: Duration) -> Duration? {
        if now < pausedUntil { return pausedUntil }
        var pacer = self
        pacer.advance(now: now)
        guard let rate = pacer.rate(now: now) else { return nil }
        pacer.refill(rate: rate, now: now)
        // At high rates, wake for a few sends at a time: a wake-up per send costs more than the send.
        let wanted = min(pacer.capacity(rate), max(1, rate * 0.005))
        guard pacer.tokens < wanted else { return nil }
        return now + .seconds((wanted - pacer.tokens) / rate)
    }

    /// Sends this instance started per second, lately.
    public func ownTakenPerSecond(now: Duration) -> Double { taken.perSecond(now: now, since: nil) }

    /// Sends per second this instance could use at the hub, the share it asks the others for:
    /// what it started over the last second and what waits to start (for a token, a
    /// `Retry-After`, a slot) as if it were to go within the next second. The last second, not
    /// less: an instance whose items come in bursts keeps its share between them (counting the
    /// last 300 ms, a burst of 200 every 0.8 s beside a backlog waited 331 ms at the median
    /// instead of 277, simulated), at the cost of a second's share held after a backlog runs dry
    /// (`SharedQuotaTests`).
    public func demand(waiting: Int, now: Duration) -> Double {
        ownTakenPerSecond(now: now) + Double(max(0, waiting))
    }

    /// Sends of this instance accepted per second, lately, while it was sending (a second that
    /// began with a quiet spell is measured from its end).
    public func ownAcceptedPerSecond(now: Duration) -> Double { accepted.perSecond(now: now, since: busySince) }

    /// What the other instances sending to this hub said; they share its rate from now on.
    public mutating func share(_ group: Group, now: Duration) {
        self.group = group
        self.group.share = min(1, max(0.01, group.share))
        if let pending = remeasure { measureAgain(pending, now: now) }
        if learntUnheard { decideRateLearntUnheard(now: now) }
        if group.known { everKnown = true }
        guard let rate = group.othersRate, rate > 0, !followBusiest(rate, now: now) else { return }
        switch mode {
        case .unpaced where configuration.maxRate == nil:
            hold(rate, now: now, adopted: true)
            startEpoch(at: now)
        case .probing where rate > hubRate(now: now) ?? .infinity:
            mode = .probing(from: rate, since: now)
        case .recovering where learntAlone && group.othersTaken > 0:
            // The ceiling was measured before the others were heard, from this instance's part
            // of the hub's traffic alone: take the busiest's rate if higher, and probe soon.
            learntAlone = false
            probingSpan = configuration.probingAfterDoubling
            if let own = hubRate(now: now), rate > own { hold(rate, now: now, adopted: true) }
        default:
            break
        }
    }

    /// Nothing sent for a second, beside a busier instance with items waiting (`Group.othersRate`)
    /// that paces below this one's estimate: this one's was last tried when it sent, the busiest's
    /// is tried every second, so it is taken for this one's. An instance whose few items went out
    /// in a cold start's first second went on doubling untried from the busiest's rate while it
    /// had nothing to send, up to 3.6x the quota on Tansu; given a stopped instance's partitions,
    /// it sent its share of that, was throttled, and cut from a second sent at that share
    /// (simulated, 0.81-0.87x of the quota over the 5 s after the hand-over, 3% throttled;
    /// `SharedQuotaTests`). Downward only, but for a rate it follows already: taken up by
    /// instances that still sent a little, the rate of a busiest one doubling through a cold start
    /// stormed six simulated instances (13% throttled), and held a bursty one's below what it had
    /// learnt (0.74x of the quota used).
    private mutating func followBusiest(_ rate: Double, now: Duration) -> Bool {
        guard now >= pausedUntil, decrease == nil, mode != .unpaced, mode != .fixed,
            lastTakenAt.map({ now - $0 > .seconds(1) }) ?? true,
            let own = hubRate(now: now), own > 1.05 * rate || (followed && rate > 1.05 * own)
        else { return false }
        hold(rate, now: now, adopted: true)
        // What this instance measured belongs to the estimate it gives up. A judgement still
        // open goes on (see `resumeAfterQuiet`), a sporadic verdict returning to this rate.
        rateDecided(at: now, followed: true)
        remeasure = nil
        learntAlone = false
        learntUnheard = false
        if judging != nil {
            judging = nil
            openJudgement()
        }
        // An answer to a send started at the rate given up cuts no more.
        startEpoch(at: now)
        return true
    }

    /// A rate learnt unheard, at the first report that tells who else sends to the hub. Instances
    /// started together all learn theirs so (before the exchange's consumer joins its group), each
    /// from its own part of what the hub took; from now on each sends only its share of the hub's
    /// rate, and a ceiling held at its own part would take the group to a fraction of the quota
    /// (three simulated instances fell from 1,042 accepted a second to 717). What the hub takes is
    /// what they all had accepted per second lately (never more than they all started): a ceiling
    /// is raised to that. Decided once (within the second after a pause, only a raise is): others
    /// heard idle then, or nobody, leave it as it is, and so does an instance joining later (one
    /// known to be alone learnt the whole hub's rate). A rate still doubling goes on doubling,
    /// from the busiest's rate if higher (below): raised to the sum too, it took the others'
    /// cold-start burst for rate, and a simulated pair at a 33 ms round trip held at 0.86x of the
    /// quota for half a minute.
    private mutating func decideRateLearntUnheard(now: Duration) {
        guard group.known || group.newestSince != nil else { return }
        // Unpaced again (a sporadic verdict undid the cuts): nothing learnt to raise.
        guard let own = hubRate(now: now) else {
            learntUnheard = false
            return
        }
        guard own > 0 else { return }
        let all = min(acceptedPerSecond(now: now), takenPerSecond(now: now))
        if group.othersTaken > 0, case .recovering = mode, all > own {
            learntUnheard = false
            learntAlone = false
            hold(all, now: now, adopted: false)
        } else if now >= pausedUntil + .seconds(1) {
            learntUnheard = false
        }
        // Else sending again for less than a second after a pause: the seconds measured, this
        // instance's and the others' (who paused too, likely), still hold it; decided at a later
        // report.
    }

    /// Sending again after a quiet spell of the whole hub (this instance's, and the others sent
    /// next to nothing): the rate grew untried meanwhile, up to the cap on untried rates, past the
    /// quota when the estimate was right. Sent at that, the first second is throttled, and its cut
    /// is measured from a second still climbing: instances that waited 6 s for a leaver's
    /// partitions (a rebalance) held 0.81x of the quota over the 5 s after (`SharedQuotaTests`).
    /// So it resumes at a rate the hub has taken: the most it accepted within a second since the
    /// rate was decided, between the level of the estimate and the estimate. Not, as CUBIC after
    /// an idle spell, where the curve stood at the last send: that rate too had mostly grown
    /// untried (the group sent below it as backlogs ran dry), and resumed at 1.00-1.02x of the
    /// quota, the hand-over's first second was throttled again (0.84-0.91x over the 5 s after).
    /// A rate that was doubling (the quota rose, or the estimate is a lower bound) doubles on from
    /// there. Beside a busy instance the rate was tried: left as it is.
    private mutating func resumeAfterQuiet(now: Duration, grewIn: Mode) {
        let c = configuration
        guard let ceiling = lastCeiling else { return }
        let tried = max(ceiling * c.plateau, min(ceiling, provenSecond))
        guard tried >= c.minRate, group.othersTaken < 0.1 * tried, let learnt = hubRate(now: now), learnt > tried
        else { return }
        if case .probing = grewIn {
            // Doubling when the spell began (the estimate is a lower bound: an unreliable cut's,
            // or the quota rose): it doubles on from there. Held as a level, a cold start's
            // halved estimate stayed at 550/s for a hub with room for 5,000 (`HubPacerTests`).
            mode = .probing(from: tried, since: now)
        } else {
            // Probing on from there as if recovered to it (further along the curve from the
            // estimate, it was throttled within the hand-over's first second again: 0.84x over
            // the 5 s after). The estimate, and how soon a rate past it is probed, are kept:
            // raised at every resume, the estimate would climb on a hub's burst allowance.
            // (Doubling now, the curve grew into it untried.)
            mode = .recovering(ceiling: tried / c.plateau, since: now - c.recovery)
        }
        // A cut still judged when the spell began is judged on (bursts shorter than a judgement
        // would otherwise never learn a sporadic share), but a sporadic verdict returns here, not
        // to the rate before the cut, which grew untried since.
        judging?.mode = mode
    }

    /// This instance sends again after a quiet spell, and the rate it paces at was decided before
    /// the spell began: the mode it grew in through the spell, nil if it did not. A gap its own
    /// pacing explains (two tokens' time or less at the rate of the last send: a rate cut to a few
    /// a second) is no quiet spell: resumed at each such send, a rate probing upward from a low
    /// estimate stayed there.
    private func modeGrownWhileQuiet(now: Duration) -> Mode? {
        guard let last = lastTakenAt, now - last > configuration.quietGap, decrease == nil else { return nil }
        guard let paced = rate(now: last), paced > 0, now - last > .seconds(2 / paced) else { return nil }
        switch mode {
        case .recovering(_, let since), .probing(_, let since): return since < last || followed ? mode : nil
        case .unpaced, .fixed: return nil
        }
    }

    /// Paces at `rate` from now as if it had recovered to it, probing on from there soon.
    /// `adopted`: another instance's rate, not one this instance's sends measured.
    private mutating func hold(_ rate: Double, now: Duration, adopted: Bool) {
        adoptedAt = adopted ? now : nil
        lastCeiling = rate / configuration.plateau
        probingSpan = configuration.probingAfterDoubling
        mode = .recovering(ceiling: rate / configuration.plateau, since: now - configuration.recovery)
    }

    /// A send started in `epoch` was accepted.
    public mutating func accepted(epoch sendEpoch: Int, now: Duration) {
        accepted.add(now: now)
        spellAccepted += weight
        if lastCeiling != nil {
            provenRate = max(provenRate, acceptedPerSecond(now: now))
            // From a whole second after the decision: the second before it was the throttled one.
            if now >= decidedAt + .seconds(1) {
                provenSecond = max(provenSecond, accepted.total(now: now) + group.othersAccepted)
            }
        }
        count(sendEpoch, throttled: false)
        guard sendEpoch == epoch else { return }
        judgeIfDue(now: now)
        // The sporadic throttling is over (a storm passed): what was measured under it is too
        // low, so look upward by doubling rather than along the half-minute curve. Any share
        // learnt, trusted or not: asking for a trusted one left a group's cut rates creeping up
        // the curve (2 of 160 random group runs throttled 19% and 40% instead of 0.2% and 1.2%).
        // Not another instance's rate taken since the verdict (`adoptedAt`): never sent under it.
        // Doubled from there, an instance handed a stopped one's partitions half a minute after
        // its cold start's throttles went past the quota within a second (`HubPacerTests`). A
        // throttle let pass as sporadic since, alone, renews the verdict: the rate was sent
        // under it then.
        if case .recovering = mode, sporadicShare > 0, current.recentAnswered >= 100,
            current.recentThrottled < 1,
            let rate = hubRate(now: now)
        {
            sporadicShare = 0
            if adoptedAt.map({ $0 < sporadicJudgedAt }) ?? true { mode = .probing(from: rate, since: now) }
        }
    }

    /// A send started in `epoch` was throttled. It waits its own `Retry-After` (the caller's
    /// part); here the rate is cut, judged, or left alone.
    public mutating func throttled(epoch sendEpoch: Int, retryAfter: Duration?, now: Duration) {
        count(sendEpoch, throttled: true)
        // Sends of an earlier epoch speak of a rate already cut.
        guard sendEpoch == epoch else { return }
        if current.answered >= configuration.judgedAfter && current.share >= configuration.severeShare {
            let spellStart = spellStart ?? now
            decrease = Decrease(
                pacedRate: hubRate(now: now) ?? current.sendRate(now: now),
                spell: now - spellStart,
                lastSecond: accepted.perSecond(now: now, since: spellStart) + group.othersLastSecond,
                unheard: isUnheard
            )
            openJudgement()
            pausedUntil = max(pausedUntil, now + (retryAfter ?? configuration.defaultPause))
            current.endRate = decrease?.pacedRate
            startEpoch(at: pausedUntil)
        } else if judging != nil {
            judgeIfDue(now: now)
        } else if !looksSporadic(now: now) {
            cut(now: now)
        }
    }

    // MARK: Internals

    /// The exchange has never told who else sends, and nobody is heard: a measure now is of this
    /// instance's own part of the hub's traffic.
    private var isUnheard: Bool { !everKnown && group.newestSince == nil && group.departedAccepted == 0 }

    /// One send of this instance, counted as the hub-wide sends it stands for.
    private var weight: Double { 1 / group.share }
    /// Per second, every instance together: this one's own, measured, and the others', as told.
    private func acceptedPerSecond(now: Duration) -> Double { ownAcceptedPerSecond(now: now) + group.othersAccepted }
    private func takenPerSecond(now: Duration) -> Double { taken.perSecond(now: now, since: nil) + group.othersTaken }

    private mutating func count(_ sendEpoch: Int, throttled: Bool) {
        if sendEpoch == epoch {
            current.answer(throttled: throttled)
        } else if sendEpoch == epoch - 1, previous != nil {
            previous?.answer(throttled: throttled)
        }
    }

    /// The learnt sporadic share, as much of it as is still remembered.
    private func sporadic(now: Duration) -> Double {
        sporadicShare * pow(0.5, max(0, (now - sporadicJudgedAt) / configuration.sporadicHalfLife))
    }

    /// The same while its verdict is trusted, else none: a verdict judged afresh is judged as if
    /// nothing were known (a cut measured from what the hub accepted, a share compared with what
    /// a quota alone would leave), else it could only confirm itself.
    private func trustedSporadic(now: Duration) -> Double {
        isTrusted(now: now) ? sporadic(now: now) : 0
    }

    /// Alone on the hub (and known to be), a verdict stands while throttles confirm it: nothing
    /// else moves the hub's rate. Beside other instances, only for its trust.
    private var isAlone: Bool { group.known && group.othersTaken == 0 }

    private func isTrusted(now: Duration) -> Bool {
        isAlone || now - sporadicJudgedAt < sporadicTrustedFor
    }

    /// A throttle outside a judgement: within the sporadic share we know, while its verdict is
    /// trusted, it is no news.
    private mutating func looksSporadic(now: Duration) -> Bool {
        let known = trustedSporadic(now: now)
        guard known >= 0.01 else { return false }
        // The share at the current rate, lately. Too few answers to measure it: a known sporadic
        // hub is the likelier story.
        let answered = current.recentAnswered
        let share = current.recentShare
        guard answered >= Double(configuration.judgedAfter) else { return true }
        guard share <= known + margin(known, answers: answered) else { return false }
        // Still there: remembered afresh (alone; beside others the trust decides).
        if isAlone { sporadicJudgedAt = now }
        return true
    }

    /// Four standard deviations of a share measured over `answers`, at least 3%: a share up to
    /// this much above the sporadic one is chance (a quota adds to it as the rate grows). Four,
    /// because it is asked at every throttle: at two, chance alone would cut every few seconds.
    private func margin(_ share: Double, answers: Double) -> Double {
        max(0.03, 4 * (share * (1 - share) / max(1, answers)).squareRoot())
    }

    /// Once enough sends of the cut rate have answered: keep the cut, undo it, or cut again.
    private mutating func judgeIfDue(now: Duration) {
        guard let before = judging, let previous else { return }
        let c = configuration
        let wanted = min(c.judgedAtMost, max(c.judgedAfter, Int(4 / max(previous.recentShare, 0.01))))
        // Throttled beyond the sporadic share known: the cut did not reach under the quota.
        let known = trustedSporadic(now: now)
        let stillThrottled =
            current.throttled >= 4 && current.answered >= c.judgedAfter / 2
            && current.share > known + margin(known, answers: Double(current.answered))
        guard current.duration(now: now) >= c.judgedSpell, current.answered >= wanted || stillThrottled else { return }
        let share = current.share
        if share < c.severeShare, isSporadic(share, before: previous, now: now) {
            // Confirmed: reached while the last verdict was trusted, or soon after its trust ended.
            let confirmed = now - sporadicJudgedAt < sporadicTrustedFor * 2
            sporadicShare = share
            sporadicTrustedFor =
                confirmed ? min(c.sporadicTrustAtMost, sporadicTrustedFor * 2) : c.sporadicTrust
            sporadicJudgedAt = now
            mode = before.mode
            lastCeiling = before.lastCeiling
            provenRate = before.provenRate
            provenSecond = before.provenSecond
            probingSpan = before.probingSpan
            learntUnheard = before.learntUnheard
            judging = nil
            startEpoch(at: now)
        } else if stillThrottled {
            cut(now: now)
        } else {
            // A quota: the sporadic share learnt is judged afresh at the next throttle.
            judging = nil
            sporadicTrustedFor = .zero
        }
    }

    /// Whether the share after a cut is the share before it (sporadic) rather than what a quota
    /// would leave at the lower rate (on top of the sporadic share already known). A cut that
    /// would not have shed half the throttles of a quota proves nothing.
    private func isSporadic(_ share: Double, before: EpochSends, now: Duration) -> Bool {
        // How the epoch before ended: its last answers, at the rate it ended with.
        let shareBefore = before.recentShare
        guard before.paced, before.duration(now: now) >= configuration.judgedSpell,
            before.recentAnswered >= Double(configuration.judgedAfter), before.recentThrottled > 0
        else { return false }
        let rateBefore = min(before.endRate ?? .infinity, before.sendRate(now: now))
        let quota = rateBefore * (1 - shareBefore)
        let quotaShare = max(trustedSporadic(now: now), 1 - quota / current.sendRate(now: now))
        guard quotaShare <= shareBefore / 2 else { return false }
        // As before within chance, and nearer to it than to the quota's.
        let distance = abs(share - shareBefore)
        return distance <= margin(shareBefore, answers: Double(current.answered)) && distance < abs(share - quotaShare)
    }

    /// Lowers the rate from what the current epoch measured, and opens a judgement of the cut.
    private mutating func cut(now: Duration) {
        openJudgement()
        let c = configuration
        let pacedRate = hubRate(now: now) ?? current.sendRate(now: now)
        current.endRate = pacedRate
        let epochStart = current.startedAt ?? now
        let spell: Duration
        // This instance's own part; the others' as they reported is added once, below.
        let ownRecent, ownRate: Double
        // Seconds of the others' rate that count with this instance's own count.
        var othersSpan = 1.0
        if let busy = busySince, busy > epochStart {
            // Idle during the epoch (a rebalance, a quiet spell): only what followed measures.
            spell = now - busy
            ownRate = accepted.perSecond(now: now, since: busy)
            ownRecent = accepted.total(now: now, since: busy)
            othersSpan = min(spell, .seconds(1)).inSeconds
        } else {
            spell = now - epochStart
            // Accepted over the epoch's last second: a quota's measure if the sends went on
            // through it, too few to mean anything if they came in bursts (then only halve).
            ownRecent = spell >= .seconds(1) ? accepted.total(now: now) : current.accepted
            ownRate =
                spell >= .seconds(1)
                ? ownAcceptedPerSecond(now: now)
                : current.accepted / max(spell, .milliseconds(1)).inSeconds
        }
        let recentAccepted = ownRecent + group.othersLastSecond * othersSpan
        let acceptedRate = ownRate + group.othersLastSecond
        // The hub took the sporadically throttled sends too (they count against a quota).
        let sporadicFactor = 1 / (1 - min(0.5, trustedSporadic(now: now)))
        let measured = acceptedRate * sporadicFactor
        let throttledShare = current.recentShare
        let enough = recentAccepted >= c.reliableCount
        // In a group most of the measure is the others' second, reported: a short spell of this
        // instance's own does not make it a burst's.
        let longEnough = spell >= c.reliableSpell || group.othersAccepted >= c.reliableCount
        // Fewer sends started over the last second (of it, since sending last began again) than
        // 0.9x the rate paced at now: the rate (or this instance's share of it) grew within the
        // second, whose accepted count is then below the quota. So is the level from it: probed
        // past soon. (An instance with fewer items than its rate, or held by its concurrency
        // limit, looks the same; its measure is low too.)
        let climbing = taken.perSecond(now: now, since: busySince) < 0.9 * pacedRate * group.share
        // Within a second of the cut before, sending on throughout (no gap of `quietGap` since
        // before the cut): this epoch's accepted sends over its whole spell, whose first round
        // trip brought none, so low by that round trip (3.75% at 30 ms over 0.8 s), and probed
        // past soon. (Not after a pause or a quiet spell, nor an unpaced start: the hub's burst
        // allowance refilled then, and a spell under a second counts it as rate, a measure too
        // high.)
        let justAfterCut =
            spell < .seconds(1) && current.followsCut && busySince.map { $0 < epochStart } ?? false
        lower(
            from: pacedRate,
            measured: enough ? measured : nil,
            reliable: longEnough && enough,
            likelyLow: climbing || justAfterCut,
            unheard: isUnheard,
            since: now
        )
        startEpoch(at: now)
        current.followsCut = true
        if longEnough, enough, group.othersTaken > 0 {
            remeasure = Remeasure(
                at: now,
                cap: pacedRate * (1 - throttledShare),
                own: ownRate,
                sporadicFactor: sporadicFactor
            )
        }
    }

    /// A group's cut measured again, once every other instance's figures come from reports
    /// written after it. The level only rises. Also while the cut is judged: waiting for the
    /// verdict (up to 400 answers) let most remeasures lapse, and groups from a cold start held
    /// at 0.94× the quota (`SharedQuotaTests`). Not with an instance that joined since: its sends
    /// took part of what this one gave up, and would count twice. A later cut starts a new
    /// epoch, which drops it.
    private mutating func measureAgain(_ pending: Remeasure, now: Duration) {
        if now - pending.at > Self.remeasureWithin || group.newestSince.map({ $0 > pending.at }) == true {
            remeasure = nil
            return
        }
        guard let written = group.writtenSince, written > pending.at else { return }
        remeasure = nil
        guard case .recovering(let ceiling, let since) = mode else { return }
        let measured = min(pending.cap, (pending.own + group.othersAccepted) * pending.sporadicFactor)
        guard measured > ceiling else { return }
        lastCeiling = measured
        mode = .recovering(ceiling: measured, since: since)
    }

    /// Decides a severe throttle's cut once its pause is over.
    private mutating func resume(after d: Decrease) {
        let c = configuration
        let reliable = d.spell >= c.reliableSpell && spellAccepted >= c.reliableCount
        // From a short spell, mostly burst allowance: measured over a quarter second at least.
        let measured =
            reliable
            ? (d.spell >= .seconds(1) ? d.lastSecond : spellAccepted / d.spell.inSeconds)
            : spellAccepted / max(d.spell, .milliseconds(250)).inSeconds
        // Unheard when throttled, and not told since that it is alone: decided at a report after.
        let unheard = d.unheard && !(group.known && group.newestSince == nil)
        lower(from: d.pacedRate, measured: measured, reliable: reliable, unheard: unheard, since: pausedUntil)
        spellStart = pausedUntil
        spellAccepted = 0
    }

    /// The rate after a cut. From a reliable measure: back up along the cubic from it (never above
    /// the rate paced at). Otherwise at least halve (and no higher than a measure there is), then
    /// probe upward by doubling. `unheard`: measured from this instance's part alone (see
    /// `learntUnheard`).
    private mutating func lower(
        from pacedRate: Double,
        measured: Double?,
        reliable: Bool,
        likelyLow: Bool = false,
        unheard: Bool,
        since: Duration
    ) {
        let c = configuration
        learntUnheard = unheard
        if reliable, let measured {
            let ceiling = max(c.minRate, min(pacedRate, measured))
            lastCeiling = ceiling
            // Just after another instance left, most of the second measured was shared.
            learntAlone = group.othersTaken == 0 && group.departedAccepted == 0
            // Measured while doubling, likely low (see `cut`), or in a group (where the others'
            // part of the measure lags by a report, and joins, leaves and shares move it): probe
            // soon.
            var doubling = false
            if case .probing = mode { doubling = true }
            probingSpan = doubling || likelyLow || !learntAlone ? c.probingAfterDoubling : c.probing
            mode = .recovering(ceiling: ceiling, since: since)
        } else {
            let ceiling = max(c.minRate, min(pacedRate * 0.5 / c.decrease, measured ?? .infinity))
            lastCeiling = ceiling
            mode = .probing(from: max(c.minRate, ceiling * c.decrease), since: since)
        }
        rateDecided(at: since, followed: false)
        adoptedAt = nil
    }

    /// A new rate was decided at `at` (a cut, a pause's, the busiest's followed): what the hub
    /// took at the one given up proves nothing of it.
    private mutating func rateDecided(at: Duration, followed: Bool) {
        provenRate = 0
        provenSecond = 0
        decidedAt = at
        self.followed = followed
    }

    /// Remembers the rate before the first of a run of cuts, for a sporadic verdict to return to.
    private mutating func openJudgement() {
        if judging == nil {
            judging = Before(
                mode: mode,
                lastCeiling: lastCeiling,
                provenRate: provenRate,
                provenSecond: provenSecond,
                probingSpan: probingSpan,
                learntUnheard: learntUnheard
            )
        }
    }

    private mutating func startEpoch(at start: Duration) {
        epoch += 1
        remeasure = nil
        current.endedAt = start
        previous = current
        current = EpochSends()
        tokens = 1
        refilledAt = start
    }

    private func capacity(_ rate: Double) -> Double { max(1, rate * configuration.burst.inSeconds) }

    private mutating func refill(rate: Double, now: Duration) {
        if let refilledAt, now > refilledAt {
            tokens = min(capacity(rate), tokens + (now - refilledAt).inSeconds * rate)
        }
        refilledAt = max(refilledAt ?? now, now)
    }

    /// Decides the rate once a pause is over; turns the cubic into doubling past its bound.
    private mutating func advance(now: Duration) {
        if let decrease, now >= pausedUntil {
            self.decrease = nil
            resume(after: decrease)
        }
        guard case .recovering(let ceiling, let since) = mode, now > since else { return }
        let rate = cubic(ceiling: ceiling, at: now - since)
        if rate >= ceiling * configuration.plateau * configuration.probeAbove {
            mode = .probing(from: rate, since: now)
        }
    }

    /// From decrease × W up to plateau × W by `recovery` (concave), then growing by
    /// (probeAbove − 1) × the level over `probing` (convex).
    func cubic(ceiling: Double, at elapsed: Duration) -> Double {
        let c = configuration
        let level = ceiling * c.plateau
        let x = elapsed - c.recovery
        if x < .zero {
            let f = x / c.recovery
            return level + (level - ceiling * c.decrease) * f * f * f
        }
        let f = x / probingSpan
        return level + level * (c.probeAbove - 1) * f * f * f
    }
}

/// Events over the last second, counted in tenths of a second.
struct RateWindow: Sendable, Equatable {
    private static let buckets: Int64 = 10
    private static let bucketNanos: Int64 = 1_000_000_000 / buckets
    // Inline, not arrays: a copy of the pacer (`nextTokenAt` looks ahead on one) then retains
    // nothing, and a change checks no buffer for uniqueness; the simulations in the tests copy it
    // at every step (20% of their CPU went to it).
    private var counts = InlineArray<10, Double>(repeating: 0)
    private var starts = InlineArray<10, Int64>(repeating: -1)

    static func == (a: RateWindow, b: RateWindow) -> Bool {
        a.counts.indices.allSatisfy { a.counts[$0] == b.counts[$0] && a.starts[$0] == b.starts[$0] }
    }

    mutating func add(now: Duration) {
        let index = now.inNanoseconds / Self.bucketNanos
        let slot = Int(index % Self.buckets)
        if starts[slot] != index {
            starts[slot] = index
            counts[slot] = 0
        }
        counts[slot] += 1
    }

    /// Events in the window's buckets, from `since`'s bucket on if that is later.
    func total(now: Duration, since: Duration? = nil) -> Double {
        let current = now.inNanoseconds / Self.bucketNanos
        let first = max(current - Self.buckets + 1, since.map { $0.inNanoseconds / Self.bucketNanos } ?? 0)
        var sum = 0.0
        for slot in counts.indices where starts[slot] >= first && starts[slot] <= current {
            sum += counts[slot]
        }
        return sum
    }

    /// Per second over the window, or since the start of `since`'s bucket if that is later: only
    /// what was counted from then on is divided by the time since (events before a quiet gap
    /// divided by the first milliseconds after it stood for rates a hundred times the real one).
    func perSecond(now: Duration, since: Duration?) -> Double {
        let nanos = now.inNanoseconds
        // The window is nine whole buckets and the current one so far.
        var span = Double((Self.buckets - 1) * Self.bucketNanos + nanos % Self.bucketNanos) / 1e9
        if let since {
            // No floor: a quarter second, or a bucket, made a hub throttling 5% on top of a
            // 200/s quota throttle 19% (HubPacerTests), measuring low just after every pause.
            let bucketStart = since.inNanoseconds / Self.bucketNanos * Self.bucketNanos
            span = min(span, Double(nanos - bucketStart) / 1e9)
        }
        return span > 0 ? total(now: now, since: since) / span : 0
    }
}
