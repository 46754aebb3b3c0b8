import Broadcast
import DequeModule
import Testing

/// Several instances, each with its pacer and its backlog, sending to one hub whose quota they
/// share, on a simulated clock. They tell each other what they send and want every `interval`
/// (as `hubcast run` does through Kafka), heard `delay` later. Sends are answered after
/// `roundTrip`; a throttled one waits its `Retry-After` and goes again.
struct GroupSimulation {
    struct Instance {
        let name: String
        var pacer = HubPacer()
        var book: QuotaShare
        /// Items not yet accepted, ready to go (throttled ones come back after their Retry-After).
        var backlog: Int
        /// When each throttled send may go again, in order (answers come in the order sent).
        var retries: Deque<Duration> = []
        var inFlight: Deque<(at: Duration, accepted: Bool, epoch: Int)> = []
        var joinAt: Duration = .zero
        /// When it stops: with a last report saying so (SIGTERM) or silently (SIGKILL).
        var leaveAt: Duration?
        var leavesSilently = false
        var left = false
        /// Reports reach it only from then on (the quota topic's consumer joining its group).
        var hearsFrom: Duration = .zero
        /// Starts nothing in this span (a rebalance).
        var stalled: Range<Duration>?
        var accepted = 0

        init(name: String, backlog: Int) {
            self.name = name
            self.backlog = backlog
            book = QuotaShare(instance: name, hub: "hub")
        }

        func active(_ now: Duration) -> Bool { now >= joinAt && leaveAt.map { now < $0 } ?? true }
        var waiting: Int { backlog - inFlight.count }
    }

    var instances: [Instance]
    var quota: SimulatedQuota
    var roundTrip: Duration = .milliseconds(1)
    var concurrency = 64
    var retryAfter: Duration = .seconds(1)
    var interval: Duration = .milliseconds(250)
    var delay: Duration = .milliseconds(50)
    private var reports: [(at: Duration, report: QuotaReport)] = []
    private var nextReportAt: Duration = .zero
    private(set) var acceptedAt: [Duration] = []
    private(set) var takenAt: [Duration] = []
    private(set) var throttledAt: [Duration] = []
    private(set) var now: Duration = .zero

    init(quota: Double, backlogs: [Int]) {
        self.quota = SimulatedQuota(rate: quota, burst: quota / 10)
        instances = backlogs.enumerated().map { Instance(name: "i\($0.offset)", backlog: $0.element) }
    }

    mutating func run(until end: Duration) async {
        // CPU-bound on the cooperative pool (two threads on two cores): let other tests run between steps.
        var steps = 0
        while now < end {
            steps += 1
            if steps % 4096 == 0 { await Task.yield() }
            if now >= nextReportAt {
                exchange()
                nextReportAt = now + interval
            }
            while let first = reports.first, first.at <= now {
                reports.removeFirst()
                for i in instances.indices where instances[i].active(now) && now >= instances[i].hearsFrom {
                    instances[i].book.heard(first.report, now: now)
                }
            }
            var next = min(nextReportAt, now + .microseconds(200))
            for i in instances.indices {
                step(i)
                if let at = instances[i].inFlight.first?.at { next = min(next, at) }
            }
            now = max(next, now + .nanoseconds(100))
        }
    }

    /// Every active instance reports and takes its share from what it has heard.
    private mutating func exchange() {
        for i in instances.indices {
            var s = instances[i]
            if let leave = s.leaveAt, now >= leave {
                if !s.leavesSilently, !s.left { reports.append((now + delay, report(s, leaving: true))) }
                s.left = true
                instances[i] = s
                continue
            }
            guard s.active(now) else { continue }
            let report = report(s, leaving: false)
            reports.append((now + delay, report))
            s.pacer.share(
                s.book.group(demand: report.demand, taken: report.taken, rate: report.rate, now: now),
                now: now
            )
            instances[i] = s
        }
    }

    private func report(_ s: Instance, leaving: Bool) -> QuotaReport {
        let taken = s.pacer.ownTakenPerSecond(now: now)
        return QuotaReport(
            instance: s.name,
            hub: "hub",
            accepted: s.pacer.ownAcceptedPerSecond(now: now),
            taken: taken,
            demand: taken + Double(max(0, min(s.waiting, 2000))),
            rate: s.pacer.hubRate(now: now),
            leaving: leaving
        )
    }

    private mutating func step(_ i: Int) {
        var s = instances[i]
        defer { instances[i] = s }
        while let first = s.inFlight.first, first.at <= now {
            s.inFlight.removeFirst()
            if first.accepted {
                s.pacer.accepted(epoch: first.epoch, now: first.at)
                s.backlog -= 1
                s.accepted += 1
                acceptedAt.append(first.at)
            } else {
                s.pacer.throttled(epoch: first.epoch, retryAfter: retryAfter, now: first.at)
                s.retries.append(first.at + retryAfter)
            }
        }
        while let first = s.retries.first, first <= now { s.retries.removeFirst() }
        guard s.active(now), !(s.stalled?.contains(now) ?? false) else { return }
        let held = s.retries.count
        while s.inFlight.count < concurrency, s.waiting - held > 0, let epoch = s.pacer.take(now: now) {
            takenAt.append(now)
            let accepted = quota.admit(now: now)
            if !accepted { throttledAt.append(now) }
            s.inFlight.append((now + roundTrip, accepted, epoch))
        }
    }

    func acceptedPerSecond(from start: Duration, to end: Duration) -> Double {
        Double(acceptedAt.count { $0 >= start && $0 < end }) / (end - start).inSeconds
    }

    func throttledShare(from start: Duration, to end: Duration) -> Double {
        Double(throttledAt.count { $0 >= start && $0 < end })
            / Double(max(1, takenAt.count { $0 >= start && $0 < end }))
    }

    /// Backlogs from 1 to 10 times the smallest, `total` items in all.
    static func skewed(_ n: Int, total: Int) -> [Int] {
        let weights = (0..<n).map { n == 1 ? 1.0 : 1 + 9 * Double($0) / Double(n - 1) }
        let sum = weights.reduce(0, +)
        return weights.map { Int(Double(total) * $0 / sum) }
    }
}

@Suite struct SharedQuotaTests {
    static let quota = 1000.0

    /// `hearsFrom`: 0, or 3 s (each learns a rate from its own part of the traffic first, as when
    /// the quota topic's consumer is still joining its group).
    @Test(arguments: 1...8, [0, 3])
    func instancesStartedTogetherWithSkewedBacklogsShareTheWholeQuota(instances: Int, hearsFrom: Int) async {
        var sim = GroupSimulation(quota: Self.quota, backlogs: GroupSimulation.skewed(instances, total: 40_000))
        for i in sim.instances.indices { sim.instances[i].hearsFrom = .seconds(Int64(hearsFrom)) }
        await sim.run(until: .seconds(30))
        // The small backlogs run dry on the way: their share goes to the others.
        let settled = sim.acceptedPerSecond(from: .seconds(10), to: .seconds(30)) / Self.quota
        let whole = sim.acceptedPerSecond(from: .zero, to: .seconds(30)) / Self.quota
        let first = (1...30).first {
            sim.acceptedPerSecond(from: .seconds($0 - 1), to: .seconds($0)) >= 0.9 * Self.quota
        }
        #expect(settled >= 0.9 && settled <= 1.01, "from 10 s on: \(settled)")
        #expect(first.map { $0 <= 10 } == true, "the first second at 0.9× the quota: \(String(describing: first))")
        // Half a minute, of which the cold start is a larger part than of the benchmark's minute.
        #expect(whole >= 0.8, "cold start included: \(whole)")
        // The first second is every instance's cold-start burst (up to `concurrency` each).
        let throttled = sim.throttledShare(from: .seconds(1), to: .seconds(30))
        #expect(
            throttled <= 0.02,
            "throttled after the first second: \(throttled), in it: \(sim.throttledShare(from: .zero, to: .seconds(1)))"
        )
    }

    @Test(arguments: [false, true])
    func whenAnInstanceLeavesTheOthersTakeItsShareWithinFiveSeconds(silently: Bool) async {
        var sim = GroupSimulation(quota: Self.quota, backlogs: [20_000, 20_000, 20_000])
        sim.instances[1].leaveAt = .seconds(20)
        sim.instances[1].leavesSilently = silently
        await sim.run(until: .seconds(30))
        let before = sim.acceptedPerSecond(from: .seconds(10), to: .seconds(20)) / Self.quota
        let after = sim.acceptedPerSecond(from: .seconds(25), to: .seconds(30)) / Self.quota
        #expect(before >= 0.9, "three instances: \(before)")
        #expect(after >= 0.9, "two, from 5 s after the leave: \(after)")
        #expect(sim.throttledShare(from: .zero, to: .seconds(30)) <= 0.02)
    }

    @Test func anInstanceThatJoinsStartsFromTheGroupsRateWithoutAThrottleStorm() async {
        var sim = GroupSimulation(quota: Self.quota, backlogs: [20_000, 20_000, 20_000])
        sim.instances[2].joinAt = .seconds(20)
        await sim.run(until: .seconds(30))
        let around = sim.throttledShare(from: .seconds(15), to: .seconds(25))
        let after = sim.acceptedPerSecond(from: .seconds(22), to: .seconds(30)) / Self.quota
        #expect(around <= 0.02, "throttled around the join: \(around)")
        #expect(after >= 0.9 && after <= 1.01, "after the join: \(after)")
        #expect(sim.instances[2].accepted > 1000, "the new instance got a share: \(sim.instances[2].accepted)")
    }

    @Test(arguments: [1, 2])
    func aRebalanceStallIsNotTakenForTheQuota(instances: Int) async {
        // Nothing sent for 6 s (the partitions moving), then the backlog again: the throttle that
        // follows measures the hub after the stall, not the second that was mostly silence.
        var sim = GroupSimulation(quota: Self.quota, backlogs: [Int](repeating: 30_000, count: instances))
        for i in sim.instances.indices { sim.instances[i].stalled = Duration.seconds(10)..<Duration.seconds(16) }
        await sim.run(until: .seconds(25))
        let after = sim.acceptedPerSecond(from: .seconds(18), to: .seconds(25)) / Self.quota
        #expect(after >= 0.9, "after the stall: \(after)")
    }

    @Test func aQuietInstanceHoldsNoShare() async {
        // One instance with little to send, one with a backlog: the busy one gets what the quiet
        // one does not use.
        var sim = GroupSimulation(quota: Self.quota, backlogs: [50, 30_000])
        await sim.run(until: .seconds(20))
        let settled = sim.acceptedPerSecond(from: .seconds(5), to: .seconds(20)) / Self.quota
        #expect(settled >= 0.9, "\(settled)")
    }

    @Test func maxMinSplit() {
        #expect(QuotaShare.allocate(900, asks: [100, 1000, 1000]) == [100, 400, 400])
        #expect(QuotaShare.allocate(900, asks: [100, 200, 300]) == [200, 300, 400])
        #expect(QuotaShare.allocate(900, asks: [1000, 1000, 1000]) == [300, 300, 300])
        #expect(QuotaShare.allocate(900, asks: [0, 5000]) == [0, 900])
        #expect(QuotaShare.allocate(900, asks: []) == [])
    }

    @Test func reportsOfOtherHubsAndStaleOnesAreIgnored() {
        var book = QuotaShare(instance: "a", hub: "hub")
        book.heard(
            QuotaReport(instance: "b", hub: "other", accepted: 500, taken: 500, demand: 5000, rate: 1000),
            now: .zero
        )
        book.heard(
            QuotaReport(instance: "a", hub: "hub", accepted: 500, taken: 500, demand: 5000, rate: 1000),
            now: .zero
        )
        #expect(book.group(demand: 5000, taken: 500, rate: 1000, now: .zero) == HubPacer.Group())
        book.heard(
            QuotaReport(instance: "c", hub: "hub", accepted: 400, taken: 410, demand: 5000, rate: 1000),
            now: .zero
        )
        #expect(
            book.group(demand: 5000, taken: 500, rate: 1000, now: .seconds(1))
                == HubPacer.Group(share: 0.5, othersAccepted: 400, othersTaken: 410, othersRate: 1000)
        )
        #expect(
            book.group(demand: 5000, taken: 500, rate: 1000, now: .seconds(3)) == HubPacer.Group(),
            "not heard from for 3 s"
        )
    }

    @Test func aLeavingReportGivesTheShareBackAtOnce() {
        var book = QuotaShare(instance: "a", hub: "hub")
        book.heard(
            QuotaReport(instance: "b", hub: "hub", accepted: 500, taken: 500, demand: 5000, rate: 1000),
            now: .zero
        )
        #expect(book.group(demand: 5000, taken: 500, rate: 1000, now: .milliseconds(100)).share == 0.5)
        book.heard(
            QuotaReport(instance: "b", hub: "hub", accepted: 500, taken: 500, demand: 5000, rate: 1000, leaving: true),
            now: .milliseconds(200)
        )
        #expect(book.group(demand: 5000, taken: 500, rate: 1000, now: .milliseconds(250)) == HubPacer.Group())
        #expect(book.others(now: .milliseconds(250)) == 0)
    }
}
