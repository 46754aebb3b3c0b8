import Foundation
import Kafka

/// Paces the sends to one hub (namespace) to its quota, which nobody tells us: a token bucket whose
/// rate is learnt from throttling.
///
/// A quota refuses the excess rather than slowing accepted sends, and a send takes half a
/// millisecond, so neither latency nor a concurrency limit says anything: the signal is throttled
/// versus accepted, and the accepted rate before a throttle is the estimate of the quota.
///
/// - Until the first throttle (and without `maxRate`) nothing is paced: an unthrottled hub gets
///   everything the concurrency limit allows.
/// - A throttle pauses every send to the hub for its `Retry-After`: the hub speaks to the whole
///   client. When the pause ends, the accepted rate of the spell that ended in the throttle (its
///   last second; the late answers of the sends in flight included) becomes the ceiling.
/// - From a ceiling measured over half a second or more, the rate climbs back along a cubic
///   (RFC 8312's shape): from `decrease` × ceiling quickly to a level just under it (`plateau`),
///   where it stays for long — the hub's burst allowance makes the ceiling a slight over-estimate,
///   and every throttle costs a whole pause —, then ever faster past it. Beyond `probeAbove` × the
///   level the quota has evidently risen: the rate doubles every `doubling` until throttled.
/// - From a shorter spell (the first throttle of a burst, or right after a pause), or one that
///   accepted only a few sends, the estimate is mostly the hub's burst allowance or chance: the
///   rate at least halves and probes upward by doubling.
/// - Sends throttled that were started before the last decrease extend the pause but do not
///   lower the rate again: they speak of the rate that was already cut (`epoch`).
///
/// A value: no clock, no lock; `now` is a time since any fixed origin, as in `PipelineEngine`.
/// Simulated against a token-bucket hub in `HubPacerTests`.
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
        /// Past this multiple of the level without a throttle, the quota has moved: double.
        public var probeAbove = 1.25
        /// While doubling, how often.
        public var doubling: Duration = .seconds(1)
        /// The rate never falls below this, so that a hub throttling everything is still probed.
        public var minRate = 1.0
        /// Tokens saved up at most, as time at the current rate: the burst after an idle spell.
        public var burst: Duration = .milliseconds(10)
        /// The pause after a throttle that gave no `Retry-After`.
        public var defaultPause: Duration = .seconds(1)
        /// A spell shorter than this measured the hub's burst allowance more than its quota.
        public var reliableSpell: Duration = .milliseconds(500)
        /// A spell that accepted fewer sends than this measured too little to stand for the quota
        /// (a storm of refusals at any rate leaves spells of two or three sends): probe instead of
        /// creeping up from it for half a minute.
        public var reliableCount = 20.0

        public init() {}
    }

    /// How the rate evolves.
    public enum Mode: Sendable, Equatable {
        /// No throttle yet, no configured rate: no pacing.
        case unpaced
        /// A known quota (`maxRate`) and no throttle heard: paced at it.
        case fixed
        /// Paused by a throttle; the rate is decided when the pause ends (`Decrease`).
        case paused
        /// From `decrease` × `ceiling` to `plateau` × `ceiling` along the cubic from `since`, then past it.
        case recovering(ceiling: Double, since: Duration)
        /// Doubling from `from` at `since`, until throttled.
        case probing(from: Double, since: Duration)
    }

    /// What a throttle left to decide once its pause is over (and the answers of the sends then in
    /// flight are in).
    private struct Decrease: Sendable, Equatable {
        /// The rate paced at when throttled (infinite if unpaced).
        var pacedRate: Double
        var spell: Duration
        /// Accepted per second over the last second of the spell, measured when throttled.
        var lastSecond: Double
    }

    public let configuration: Configuration
    public private(set) var mode: Mode
    /// Incremented by every decrease; a send carries the epoch it was started in.
    public private(set) var epoch = 0
    /// Nothing is sent before this (a `Retry-After`).
    public private(set) var pausedUntil: Duration = .zero
    private var decrease: Decrease?
    private var tokens = 1.0
    private var refilledAt: Duration?
    /// When sending resumed after the last pause (or first began), and what was accepted since.
    private var spellStart: Duration?
    private var spellAccepted = 0.0
    private var accepted = RateWindow()
    private var taken = RateWindow()
    /// The last estimate of the quota, for the cap on a rate that was never tried.
    private var lastCeiling: Double?
    /// The most accepted in a second since the rate was last decided: a rate the hub has taken,
    /// so also one that may be resumed at once after a quiet spell.
    private var provenRate = 0.0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        mode = configuration.maxRate == nil ? .unpaced : .fixed
    }

    /// Sends per second allowed now; nil when unpaced, zero while paused.
    public func rate(now: Duration) -> Double? {
        let learnt: Double
        switch mode {
        case .unpaced, .fixed:
            return configuration.maxRate
        case .paused:
            return 0
        case .recovering(let ceiling, let since):
            learnt = cubic(ceiling: ceiling, at: now - since)
        case .probing(let from, let since):
            learnt = from * pow(2, min(30, max(0, (now - since) / configuration.doubling)))
        }
        // A rate that grew while little was sent was never tried: it may grow past twice what
        // is sent only up to the probing bound of the last estimate or of what the hub has taken
        // since (botocore caps it likewise); after a quiet spell a burst starts there.
        let known = max(lastCeiling ?? 0, provenRate)
        let tried = max(known * configuration.plateau * configuration.probeAbove, 2 * taken.perSecond(now: now, since: nil))
        var rate = min(learnt, tried)
        if let maximum = configuration.maxRate { rate = min(rate, maximum) }
        return max(rate, configuration.minRate)
    }

    /// Takes a token if one is there: the epoch to report a throttle of this send with, or nil
    /// (ask again at `nextTokenAt`).
    public mutating func take(now: Duration) -> Int? {
        guard now >= pausedUntil else { return nil }
        advance(now: now)
        if spellStart == nil { spellStart = now }
        if let rate = rate(now: now) {
            refill(rate: rate, now: now)
            guard tokens >= 1 else { return nil }
            tokens -= 1
        }
        taken.add(now: now)
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

    public mutating func accepted(now: Duration) {
        accepted.add(now: now)
        spellAccepted += 1
        if lastCeiling != nil { provenRate = max(provenRate, accepted.perSecond(now: now, since: nil)) }
    }

    /// A send started in `epoch` was throttled: pause the hub; lower the rate once per epoch.
    public mutating func throttled(epoch sendEpoch: Int, retryAfter: Duration?, now: Duration) {
        pausedUntil = max(pausedUntil, now + (retryAfter ?? configuration.defaultPause))
        guard sendEpoch == epoch else { return }
        epoch += 1
        let spellStart = spellStart ?? now
        decrease = Decrease(pacedRate: rate(now: now) ?? .infinity, spell: now - spellStart,
                            lastSecond: accepted.perSecond(now: now, since: spellStart))
        mode = .paused
    }

    // MARK: Internals

    private func capacity(_ rate: Double) -> Double { max(1, rate * configuration.burst.inSeconds) }

    private mutating func refill(rate: Double, now: Duration) {
        if let refilledAt, now > refilledAt {
            tokens = min(capacity(rate), tokens + (now - refilledAt).inSeconds * rate)
        }
        refilledAt = now
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

    private mutating func resume(after d: Decrease) {
        let c = configuration
        if d.spell >= c.reliableSpell && spellAccepted >= c.reliableCount {
            let measured = d.spell >= .seconds(1) ? d.lastSecond : spellAccepted / d.spell.inSeconds
            let ceiling = max(c.minRate, min(d.pacedRate, measured))
            lastCeiling = ceiling
            mode = .recovering(ceiling: ceiling, since: pausedUntil)
        } else {
            // Mostly burst allowance: at least halve, and look upward from there.
            let measured = spellAccepted / max(d.spell, .milliseconds(250)).inSeconds
            let ceiling = max(c.minRate, min(d.pacedRate * 0.5 / c.decrease, measured))
            lastCeiling = ceiling
            mode = .probing(from: max(c.minRate, ceiling * c.decrease), since: pausedUntil)
        }
        tokens = 1
        refilledAt = pausedUntil
        spellStart = pausedUntil
        spellAccepted = 0
        provenRate = 0
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
        let f = x / c.probing
        return level + level * (c.probeAbove - 1) * f * f * f
    }
}

/// Events per second over the last second, counted in tenths of a second.
struct RateWindow: Sendable, Equatable {
    private static let bucketsPerSecond: Int64 = 10
    private static let bucketNanos: Int64 = 1_000_000_000 / bucketsPerSecond
    private var counts = [Double](repeating: 0, count: Int(bucketsPerSecond))
    private var starts = [Int64](repeating: -1, count: Int(bucketsPerSecond))

    mutating func add(now: Duration) {
        let index = Self.nanoseconds(now) / Self.bucketNanos
        let slot = Int(index % Self.bucketsPerSecond)
        if starts[slot] != index {
            starts[slot] = index
            counts[slot] = 0
        }
        counts[slot] += 1
    }

    /// Per second over the buckets of the last second, or since `since` if that is later.
    func perSecond(now: Duration, since: Duration?) -> Double {
        let nanos = Self.nanoseconds(now)
        let current = nanos / Self.bucketNanos
        var sum = 0.0
        for slot in counts.indices where starts[slot] >= 0 && current - starts[slot] < Self.bucketsPerSecond {
            sum += counts[slot]
        }
        // The window is nine whole buckets and the current one so far.
        var span = Double((Self.bucketsPerSecond - 1) * Self.bucketNanos + nanos % Self.bucketNanos) / 1e9
        if let since { span = min(span, (now - since).inSeconds) }
        return span > 0 ? sum / span : 0
    }

    private static func nanoseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue &+ attoseconds / 1_000_000_000
    }
}
