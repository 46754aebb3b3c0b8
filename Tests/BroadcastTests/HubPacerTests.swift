import Broadcast
import Testing

/// A hub with a quota as nginx's `limit_req` enforces one (and Notification Hubs, by the minute):
/// `rate` per second with `burst` requests of allowance; the excess is refused with `Retry-After`.
struct SimulatedQuota {
    var rate: Double
    var burst: Double
    private var excess = 0.0
    private var last: Duration = .zero

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
    }

    /// True if a request arriving at `now` is accepted.
    mutating func admit(now: Duration) -> Bool {
        let drained = max(0, excess - rate * (now - last).inSeconds)
        last = now
        guard drained + 1 <= burst + 1 else {
            excess = drained
            return false
        }
        excess = drained + 1
        return true
    }
}

/// Drives a pacer against a simulated quota with unlimited demand, event by event on a simulated
/// clock: sends answered after `roundTrip`, at most `concurrency` in flight.
struct PacerSimulation {
    var pacer: HubPacer
    var quota: SimulatedQuota
    var roundTrip: Duration = .milliseconds(1)
    var concurrency = 64
    var retryAfter: Duration = .seconds(1)
    /// Until this time, every other request is refused whatever the rate (a storm of 429s, as
    /// `make faults` scenario 1 makes the emulator answer), quota or not.
    var stormUntil: Duration = .zero
    private var stormParity = false
    private(set) var acceptedAt: [Duration] = []
    private(set) var takenAt: [Duration] = []
    private(set) var throttled = 0
    private var inFlight: [(at: Duration, accepted: Bool, epoch: Int)] = []
    private(set) var now: Duration = .zero

    init(pacer: HubPacer = HubPacer(), quota: SimulatedQuota) {
        self.pacer = pacer
        self.quota = quota
    }

    mutating func run(until end: Duration, quotaChange: (at: Duration, rate: Double)? = nil) {
        while now < end {
            if let change = quotaChange, now >= change.at, quota.rate != change.rate {
                quota.rate = change.rate
                quota.burst = change.rate / 10
            }
            // Answers due, in order.
            while let first = inFlight.first, first.at <= now {
                inFlight.removeFirst()
                if first.accepted {
                    pacer.accepted(now: first.at)
                    acceptedAt.append(first.at)
                } else {
                    pacer.throttled(epoch: first.epoch, retryAfter: retryAfter, now: first.at)
                }
            }
            while inFlight.count < concurrency, let epoch = pacer.take(now: now) {
                takenAt.append(now)
                var accepted = quota.admit(now: now)
                if now < stormUntil {
                    stormParity.toggle()
                    accepted = accepted && stormParity
                }
                if !accepted { throttled += 1 }
                inFlight.append((now + roundTrip, accepted, epoch))
            }
            var next = now + .microseconds(200)
            if let answer = inFlight.first?.at { next = min(next, answer) }
            if inFlight.count < concurrency, let token = pacer.nextTokenAt(now: now) { next = min(next, token) }
            now = max(next, now + .nanoseconds(100))
        }
    }

    func acceptedPerSecond(from start: Duration, to end: Duration) -> Double {
        Double(acceptedAt.count { $0 >= start && $0 < end }) / (end - start).inSeconds
    }

    var throttledShare: Double { Double(throttled) / Double(max(1, takenAt.count)) }
}

@Suite struct HubPacerTests {
    @Test(arguments: [100.0, 500, 2000, 5000])
    func findsAQuotaFromAColdStart(quota: Double) {
        var sim = PacerSimulation(quota: SimulatedQuota(rate: quota, burst: quota / 10))
        sim.run(until: .seconds(60))
        let goodput = sim.acceptedPerSecond(from: .zero, to: .seconds(60)) / quota
        let settled = sim.acceptedPerSecond(from: .seconds(30), to: .seconds(60)) / quota
        #expect(goodput >= 0.85, "over the whole minute, cold start included: \(goodput)")
        #expect(settled >= 0.9 && settled <= 1.01, "once settled, within 10% of the quota: \(settled)")
        #expect(sim.throttledShare <= 0.05, "throttled: \(sim.throttledShare)")
    }

    @Test(arguments: [(1000.0, 2000.0), (2000.0, 1000.0), (1000.0, 300.0)])
    func followsAQuotaThatMoves(from: Double, to: Double) {
        var sim = PacerSimulation(quota: SimulatedQuota(rate: from, burst: from / 10))
        sim.run(until: .seconds(120), quotaChange: (.seconds(30), to))
        let before = sim.acceptedPerSecond(from: .seconds(15), to: .seconds(30)) / from
        let after = sim.acceptedPerSecond(from: .seconds(90), to: .seconds(120)) / to
        #expect(before >= 0.9, "before the change: \(before)")
        #expect(after >= 0.9 && after <= 1.01, "within 10% of the new quota: \(after)")
        #expect(sim.throttledShare <= 0.05)
    }

    @Test func aStormOfRefusalsLeavesNoLowCeilingBehind() {
        // Half of all sends refused for 15 s, then a hub with room for 5,000/s.
        var sim = PacerSimulation(quota: SimulatedQuota(rate: 5000, burst: 250))
        sim.stormUntil = .seconds(15)
        sim.run(until: .seconds(45))
        // Spells of a few sends each measure nothing: the pacer probes by doubling, not along a
        // half-minute curve from the storm's trickle.
        let after = sim.acceptedPerSecond(from: .seconds(30), to: .seconds(45))
        #expect(after >= 0.8 * 5000, "15 s after the storm: \(after)/s")
    }

    @Test func afterAQuietSpellTheRateIsWhatTheHubLastTookNotTheStormsTrickle() {
        // A storm, then a hub that never throttles: the rate doubles up and is never cut again.
        var sim = PacerSimulation(quota: SimulatedQuota(rate: 1_000_000, burst: 1_000_000))
        sim.stormUntil = .seconds(15)
        sim.run(until: .seconds(35))
        let taken = sim.acceptedPerSecond(from: .seconds(34), to: .seconds(35))
        #expect(taken >= 5000, "the rate came back: \(taken)/s")
        // Breaking news after a quiet minute goes out at about the rate the hub last took.
        let afterQuiet = sim.pacer.rate(now: sim.now + .seconds(60)) ?? .infinity
        #expect(afterQuiet >= 0.9 * taken, "after a minute without sends: \(afterQuiet)/s")
    }

    @Test func unthrottledIsUnpaced() {
        var pacer = HubPacer()
        for _ in 0..<10_000 { #expect(pacer.take(now: .zero) != nil) }
        #expect(pacer.rate(now: .zero) == nil)
        #expect(pacer.nextTokenAt(now: .zero) == nil)
    }

    @Test func retryAfterPausesEverySendToTheHub() {
        var pacer = HubPacer()
        let epoch = pacer.take(now: .zero)!
        for _ in 0..<10 { _ = pacer.take(now: .zero) }
        pacer.throttled(epoch: epoch, retryAfter: .seconds(3), now: .milliseconds(1))
        for ms in stride(from: 1, to: 3001, by: 50) {
            #expect(pacer.take(now: .milliseconds(Int64(ms))) == nil, "paused at \(ms) ms")
        }
        #expect(pacer.nextTokenAt(now: .seconds(1)) == .milliseconds(3001))
        #expect(pacer.take(now: .milliseconds(3001)) == epoch + 1)
    }

    @Test func sendsOfAnEarlierEpochExtendThePauseButDoNotLowerTheRateAgain() {
        var pacer = HubPacer()
        let epoch = pacer.take(now: .zero)!
        for ms in 1...1000 { _ = pacer.take(now: .milliseconds(Int64(ms))); pacer.accepted(now: .milliseconds(Int64(ms))) }
        pacer.throttled(epoch: epoch, retryAfter: .seconds(1), now: .milliseconds(1001))
        var once = pacer
        #expect(once.take(now: .milliseconds(2001)) == epoch + 1)
        let rateAfterOne = once.rate(now: .milliseconds(3001))
        pacer.throttled(epoch: epoch, retryAfter: .seconds(1), now: .milliseconds(1500))
        #expect(pacer.epoch == epoch + 1)
        #expect(pacer.pausedUntil == .milliseconds(2500), "the later Retry-After still counts")
        #expect(pacer.take(now: .milliseconds(2400)) == nil)
        #expect(pacer.take(now: .milliseconds(2500)) == epoch + 1)
        // The same cut, only later: one decrease for the two throttles.
        #expect(pacer.rate(now: .milliseconds(3500)) == rateAfterOne)
        #expect(rateAfterOne.map { $0 > 800 && $0 < 1000 } == true, "about 0.9 × the 1,000/s accepted: \(String(describing: rateAfterOne))")
    }

    @Test func neverExceedsMaxRate() {
        var configuration = HubPacer.Configuration()
        configuration.maxRate = 200
        // A hub that never throttles, and one whose quota is above the cap: both stay under it.
        for quota in [1_000_000.0, 250] {
            var sim = PacerSimulation(pacer: HubPacer(configuration: configuration), quota: SimulatedQuota(rate: quota, burst: quota / 10))
            sim.run(until: .seconds(20))
            let capacity = max(1, 200 * configuration.burst.inSeconds)
            var start = 0
            for (end, t) in sim.takenAt.enumerated() {
                while sim.takenAt[start] <= t - .seconds(1) { start += 1 }
                #expect(Double(end - start + 1) <= 200 + capacity + 1, "sends in the second before \(t)")
                if Double(end - start + 1) > 200 + capacity + 1 { break }
            }
            #expect(sim.acceptedPerSecond(from: .seconds(5), to: .seconds(20)) >= 190, "and it does use the rate")
        }
    }

    @Test func aThrottleAtTheCapStillLowersTheRate() {
        var configuration = HubPacer.Configuration()
        configuration.maxRate = 1000
        var sim = PacerSimulation(pacer: HubPacer(configuration: configuration), quota: SimulatedQuota(rate: 400, burst: 40))
        sim.run(until: .seconds(60))
        let settled = sim.acceptedPerSecond(from: .seconds(30), to: .seconds(60))
        #expect(settled >= 360 && settled <= 404, "a wrong --max-rate is corrected by throttling: \(settled)")
    }
}
