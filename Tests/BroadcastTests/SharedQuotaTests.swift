import Broadcast
import DequeModule
import Foundation
import TestSupport
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
        /// Where its items left unsent go when it leaves, split evenly (the rebalance that follows).
        var handsOverTo: [Int] = []
        /// Reports reach it only from then on (the quota topic's consumer joining its group).
        var hearsFrom: Duration = .zero
        /// Starts nothing in this span (a rebalance).
        var stalled: Range<Duration>?
        /// Items that arrive in bursts (a quiet partition): this many every so often.
        var arrivals: (every: Duration, items: Int)?
        var nextArrivalAt: Duration = .zero
        var accepted = 0
        /// When each item of `arrivals` came, oldest first, while it waits: an item's wait ends at
        /// the first accepted send after it came (this instance's sends go in the order they came).
        var arrivedAt: Deque<Duration> = []
        /// Each arrived item's time from arrival to the hub's acceptance.
        var waits: [Duration] = []
        /// Its items are breaking news, and its reports say so as the engine's do (`urgent`).
        var breaking = false
        var throttledCount = 0

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
    /// How long a leaver's partitions take to reach the others (a rebalance).
    var handOverAfter: Duration = .seconds(6)
    private var handOvers: [(at: Duration, items: Int, to: [Int])] = []
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
            while let first = handOvers.first, first.at <= now {
                handOvers.removeFirst()
                for (n, i) in first.to.enumerated() {
                    instances[i].backlog += first.items / first.to.count + (n < first.items % first.to.count ? 1 : 0)
                }
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
                // Everything not on its way to being accepted: what waits, and the sends in flight
                // that will come back throttled (their retries would be the next owner's).
                let handed = s.backlog - s.inFlight.count { $0.accepted }
                if !s.left, !s.handsOverTo.isEmpty, handed > 0 {
                    handOvers.append((now + handOverAfter, handed, s.handsOverTo))
                    s.backlog -= handed
                }
                s.left = true
                instances[i] = s
                continue
            }
            guard s.active(now) else { continue }
            let report = s.book.stamp(report(s, leaving: false), now: now)
            reports.append((now + delay, report))
            s.pacer.share(s.book.group(report, now: now), now: now)
            instances[i] = s
        }
    }

    private func report(_ s: Instance, leaving: Bool) -> QuotaReport {
        // As the engine holds only so many sends, what an instance here says waits is bounded.
        let waiting = max(0, min(s.waiting, 2000))
        return QuotaReport(
            instance: s.name,
            hub: "hub",
            accepted: s.pacer.ownAcceptedPerSecond(now: now),
            taken: s.pacer.ownTakenPerSecond(now: now),
            demand: s.pacer.demand(waiting: waiting, now: now),
            rate: s.pacer.hubRate(now: now),
            leaving: leaving,
            urgent: s.breaking ? Double(waiting) : nil
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
                if let arrived = s.arrivedAt.popFirst() { s.waits.append(first.at - arrived) }
            } else {
                s.pacer.throttled(epoch: first.epoch, retryAfter: retryAfter, now: first.at)
                s.throttledCount += 1
                s.retries.append(first.at + retryAfter)
            }
        }
        while let first = s.retries.first, first <= now { s.retries.removeFirst() }
        if let arrivals = s.arrivals, now >= s.nextArrivalAt {
            s.backlog += arrivals.items
            // Only where the backlog starts empty is "oldest first" each arrival's own wait.
            if s.backlog == arrivals.items + s.arrivedAt.count {
                s.arrivedAt.append(contentsOf: repeatElement(now, count: arrivals.items))
            }
            s.nextArrivalAt = now + arrivals.every
        }
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

    /// A group run drawn at random (see `noThrottleStormInRandomGroups`).
    static func random(using random: inout SeededGenerator) -> GroupSimulation {
        let n = Int.random(in: 2...4, using: &random)
        var backlogs = (0..<n).map { _ in Int.random(in: 0...40_000, using: &random) }
        if Bool.random(using: &random) { backlogs[0] = Int.random(in: 0...200, using: &random) }
        var sim = GroupSimulation(quota: 1000, backlogs: backlogs)
        sim.roundTrip = .milliseconds(Int64.random(in: 1...40, using: &random))
        sim.delay = .milliseconds(Int64.random(in: 5...400, using: &random))
        for i in sim.instances.indices {
            if Int.random(in: 0..<3, using: &random) == 0 {
                sim.instances[i].arrivals = (
                    every: .milliseconds(Int64.random(in: 100...1500, using: &random)),
                    items: Int.random(in: 1...300, using: &random)
                )
            }
            if Int.random(in: 0..<3, using: &random) == 0 {
                let start = Int64.random(in: 2...30, using: &random)
                let length = Int64.random(in: 1...8, using: &random)
                sim.instances[i].stalled = Duration.seconds(start)..<Duration.seconds(start + length)
            }
            if Int.random(in: 0..<4, using: &random) == 0 {
                sim.instances[i].hearsFrom = .seconds(Int64.random(in: 0...3, using: &random))
            }
            if i > 0, Int.random(in: 0..<5, using: &random) == 0 {
                sim.instances[i].joinAt = .seconds(Int64.random(in: 5...30, using: &random))
            }
        }
        return sim
    }

    /// Backlogs from 1 to 10 times the smallest, `total` items in all.
    static func skewed(_ n: Int, total: Int) -> [Int] {
        let weights = (0..<n).map { n == 1 ? 1.0 : 1 + 9 * Double($0) / Double(n - 1) }
        let sum = weights.reduce(0, +)
        return weights.map { Int(Double(total) * $0 / sum) }
    }
}

@Suite(.onComputeThreads) struct SharedQuotaTests {
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

    /// The others' part of a cut's measure is their last reports, up to half a second behind while
    /// the rates climb from a cold start. Measured once, groups held at 0.88–0.94× of the quota
    /// from the fourth second to the twelfth, where one alone took 1.00×: a cut in a group is
    /// measured again from the others' reports written after it. The cold start's first seconds
    /// still climb slower in a group (each instance's first burst measures its own part only);
    /// over a minute, as the benchmark runs, that is within 0.015. Heard only after 3 s (the
    /// quota topic's consumer still joining its group), each had learnt a ceiling from its own
    /// part and then sent its share of that: three instances lost 0.022 of the minute (0.946×
    /// against 0.968× alone) until a ceiling learnt unheard was raised to what all had accepted.
    @Test(arguments: 2...4, [0, 2, 3])
    func aGroupFromAColdStartPacesAsOneInstanceAlone(instances: Int, hearsFrom: Int) async {
        func run(_ n: Int) async -> (whole: Double, settled: Double, throttled: Double) {
            var sim = GroupSimulation(quota: Self.quota, backlogs: [Int](repeating: 60_000 / n, count: n))
            sim.delay = .milliseconds(100)
            for i in sim.instances.indices { sim.instances[i].hearsFrom = .seconds(Int64(hearsFrom)) }
            await sim.run(until: .seconds(60))
            return (
                sim.acceptedPerSecond(from: .zero, to: .seconds(60)) / Self.quota,
                sim.acceptedPerSecond(from: .seconds(4), to: .seconds(12)) / Self.quota,
                sim.throttledShare(from: .seconds(1), to: .seconds(60))
            )
        }
        let alone = await run(1), group = await run(instances)
        let figures = "\(instances) instances \(group), one alone \(alone)"
        #expect(group.settled >= 0.95, "from 4 to 12 s: \(figures)")
        #expect(group.settled >= alone.settled - 0.02, "from 4 to 12 s: \(figures)")
        #expect(group.whole >= alone.whole - 0.015, "the first minute: \(figures)")
        #expect(group.throttled <= 0.02, "throttled after the first second: \(figures)")
    }

    /// A pacer that learns its ceiling before the exchange has told it anything (1,000 a second of
    /// its own, cut at 1 s), sending at its paced rate until `heardAt`, then told `told` (the first
    /// report that says who else sends), and at 4 s the others sending 900 a second.
    static func ceilingLearntUnheard(told: HubPacer.Group?, heardAt: Int64 = 2500) -> (before: Double, after: Double) {
        var pacer = HubPacer()
        pacer.share(HubPacer.Group(known: false), now: .zero)
        pacer.sendOneAMillisecond(0..<1000)
        pacer.throttleOne(at: 1000)
        pacer.sendEveryToken(1001..<heardAt)
        let before = pacer.hubRate(now: .milliseconds(heardAt)) ?? 0
        if let told { pacer.share(told, now: .milliseconds(heardAt)) }
        pacer.sendEveryToken(heardAt..<4000)
        let others = HubPacer.Group(
            share: 0.5,
            othersAccepted: 900,
            othersTaken: 900,
            newestSince: .milliseconds(heardAt),
            known: true
        )
        pacer.share(others, now: .seconds(4))
        return (before, pacer.hubRate(now: .seconds(4)) ?? 0)
    }

    /// Heard sending at the first report: the ceiling rises to what all had accepted (its own
    /// ~900 a second and the others' 900). Told first that it is alone, or that the others are
    /// there but idle, it keeps its ceiling when they start sending: the others' sends are then a
    /// join, not a part of the hub its ceiling left out.
    @Test func aCeilingLearntBeforeTheOthersWereHeardIsRaisedOnceToWhatAllHadAccepted() {
        let heard = Self.ceilingLearntUnheard(told: nil)
        #expect(heard.before > 850 && heard.before < 1000, "\(heard)")
        #expect(heard.after > 1.7 * heard.before && heard.after < 1900, "raised to the sum: \(heard)")
        let alone = Self.ceilingLearntUnheard(told: HubPacer.Group(known: true))
        #expect(alone.after < 1.1 * alone.before, "known alone first, then joined: \(alone)")
        let idle = Self.ceilingLearntUnheard(
            told: HubPacer.Group(share: 0.5, newestSince: .milliseconds(2500), known: true)
        )
        #expect(idle.after < 1.1 * idle.before, "others idle when first heard, then sending: \(idle)")
        // A report that tells nothing (own reports not back, nobody heard) decides nothing.
        let nothing = Self.ceilingLearntUnheard(told: HubPacer.Group(known: false))
        #expect(nothing.after > 1.7 * nothing.before, "\(nothing)")
    }

    /// What a remeasure waits for: the others' reports written after the cut, by this instance's
    /// clock (heard, less the latency its own reports take through the exchange), and no
    /// instance new since.
    @Test func reportsAreDatedByTheExchangesLatencyAndPeersByWhenTheyCame() {
        var book = QuotaShare(instance: "a", hub: "hub")
        let own = QuotaReport(instance: "a", hub: "hub", accepted: 500, taken: 500, demand: 5000, rate: 1000)
        let peer = QuotaReport(instance: "b", hub: "hub", accepted: 400, taken: 400, demand: 5000, rate: 1000)
        book.heard(peer, now: .milliseconds(50))
        let first = book.stamp(own, now: .milliseconds(100))
        #expect(first.seq == 0)
        // Until its own report comes back the latency is unknown: no date.
        book.heard(peer, now: .milliseconds(200))
        var group = book.group(first, now: .milliseconds(200))
        #expect(group.writtenSince == nil)
        #expect(group.newestSince == .milliseconds(50))
        // Back after 150 ms: b's last report, heard at 300 ms, was written by 150 ms.
        book.heard(first, now: .milliseconds(250))
        book.heard(peer, now: .milliseconds(300))
        let second = book.stamp(own, now: .milliseconds(350))
        #expect(second.seq == 1)
        group = book.group(second, now: .milliseconds(350))
        #expect(group.writtenSince == .milliseconds(150))
        // A newcomer: the oldest report now is its, and it is the newest peer.
        book.heard(
            QuotaReport(instance: "c", hub: "hub", accepted: 0, taken: 0, demand: 100, rate: nil),
            now: .milliseconds(400)
        )
        book.heard(peer, now: .milliseconds(450))
        group = book.group(second, now: .milliseconds(450))
        #expect(group.writtenSince == .milliseconds(250))
        #expect(group.newestSince == .milliseconds(400))
        // An older version's own report, without a number, leaves the latency as it was.
        book.heard(own, now: .milliseconds(900))
        #expect(book.group(second, now: .milliseconds(900)).writtenSince == .milliseconds(250))
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

    /// Breaking news on an instance whose partitions are otherwise quiet, while two others drain
    /// bulk backlogs at the quota (30 ms round trips): one item a second, or a burst of 50 (one
    /// story to 50 audiences) every 10 s; each run beside the same run whose reports say nothing
    /// urgent (an older version's). Without urgent asks, the quiet instance holds no share when a
    /// burst comes, sends it into a hub the others keep full and waits out the `Retry-After` of
    /// what was throttled; with them, the others make room first.
    @Test(arguments: [(1, 200.0), (50, 200.0), (1, 1000.0), (50, 1000.0)])
    func breakingNewsOnAQuietInstanceIsNotHeldBehindAnothersBacklog(items: Int, quota: Double) async {
        struct Run {
            var p50: Duration, p99: Duration, throttled: Int, used: Double
        }
        func run(urgent: Bool) async -> Run? {
            var sim = GroupSimulation(quota: quota, backlogs: [0, 40_000, 40_000])
            sim.roundTrip = .milliseconds(30)
            sim.instances[0].arrivals = (every: .seconds(items == 1 ? 1 : 10), items: items)
            sim.instances[0].nextArrivalAt = .seconds(5)
            sim.instances[0].breaking = urgent
            await sim.run(until: .seconds(60))
            let waits = sim.instances[0].waits.sorted()
            #expect(waits.count >= 50, "items accepted: \(waits.count)")
            guard waits.count >= 50 else { return nil }
            return Run(
                p50: waits[waits.count / 2],
                p99: waits[waits.count * 99 / 100],
                throttled: sim.instances[0].throttledCount,
                used: sim.acceptedPerSecond(from: .seconds(10), to: .seconds(60)) / quota
            )
        }
        guard let without = await run(urgent: false), let with = await run(urgent: true) else { return }
        let figures = "with urgent asks \(with), without \(without)"
        if items == 1 {
            // A lone item goes at once either way, before the others have heard of it: one in
            // about twenty meets the hub they keep full and waits out its `Retry-After`. Which
            // run's p99 is such an item is chance, one item a second for a minute.
            #expect(with.p50 <= .milliseconds(50), "\(figures)")
            #expect(with.throttled <= 5, "\(figures)")
        } else {
            #expect(with.p99 < without.p99, "\(figures)")
            #expect(with.throttled * 10 < max(10, without.throttled), "\(figures)")
        }
        #expect(with.p99 <= .milliseconds(1300), "\(figures)")
        // The busy ones still fill the quota around it: making room costs them at most what
        // waits for the others' next split.
        #expect(with.used >= 0.88, "\(figures)")
    }

    /// Reports travel as JSON between versions: one without `urgent` (an older instance's) reads
    /// as none, and a newer one keeps it.
    @Test func reportsWithAndWithoutUrgentAsksRead() throws {
        let old = #"{"instance":"b","hub":"h","accepted":1,"taken":2,"demand":3,"rate":4,"leaving":false}"#
        let decoded = try JSONDecoder().decode(QuotaReport.self, from: Data(old.utf8))
        #expect(decoded == QuotaReport(instance: "b", hub: "h", accepted: 1, taken: 2, demand: 3, rate: 4))
        let new = QuotaReport(instance: "a", hub: "h", accepted: 1, taken: 2, demand: 30, rate: nil, urgent: 25)
        #expect(try JSONDecoder().decode(QuotaReport.self, from: JSONEncoder().encode(new)) == new)
    }

    /// The wait before its own urgent ask counts starts when the ask does, also when the last ask
    /// ended while the instance heard nobody: a stale start would let it ask at once, before the
    /// others had made room.
    @Test func anUrgentAskThatEndedAloneDoesNotSkipTheNextWait() {
        var book = QuotaShare(instance: "a", hub: "hub")
        let peer = QuotaReport(instance: "b", hub: "hub", accepted: 900, taken: 900, demand: 5000, rate: 1000)
        book.heard(peer, now: .zero)
        _ = book.group(demand: 100, urgent: 80, accepted: 20, taken: 20, rate: 1000, now: .zero)
        // The peer's reports stop (older than 2 s): alone, with nothing urgent any more.
        _ = book.group(demand: 20, accepted: 20, taken: 20, rate: 1000, now: .seconds(3))
        book.heard(peer, now: .seconds(4))
        let share = book.group(demand: 100, urgent: 80, accepted: 20, taken: 20, rate: 1000, now: .seconds(4)).share
        #expect(abs(share - 0.025) < 1e-9, "only the other 20 (25 with headroom) at first: \(share)")
    }

    @Test func urgentAsksAreMetFirst() {
        // Breaking news on one, bulk on two: the breaking ask is met whole, the rest split.
        #expect(QuotaShare.allocate(1000, urgent: [250, 0, 0], rest: [0, 5000, 5000]) == [250, 375, 375])
        // More urgent than the rate: max-min fair among the urgent, nothing for the rest.
        #expect(QuotaShare.allocate(200, urgent: [250, 50, 0], rest: [0, 0, 5000]) == [150, 50, 0])
        // No urgent ask: exactly the split without one.
        #expect(
            QuotaShare.allocate(900, urgent: [0, 0, 0], rest: [100, 1000, 1000])
                == QuotaShare.allocate(900, asks: [100, 1000, 1000])
        )
        // An older peer says nothing urgent.
        var book = QuotaShare(instance: "a", hub: "hub")
        book.heard(
            QuotaReport(instance: "b", hub: "hub", accepted: 900, taken: 900, demand: 5000, rate: 1000),
            now: .zero
        )
        // 80 breaking sends wait of a demand of 100: at first only the other 20 are asked for (25
        // with headroom), until the others have had time to make room; then the 80 too, as the
        // rate that sends them within a quarter second.
        let first = book.group(demand: 100, urgent: 80, accepted: 20, taken: 20, rate: 1000, now: .zero).share
        #expect(abs(first - 0.025) < 1e-9, "\(first)")
        let then = book.group(demand: 100, urgent: 80, accepted: 20, taken: 20, rate: 1000, now: .milliseconds(400))
            .share
        #expect(abs(then - 0.345) < 1e-9, "\(then)")
        #expect(book.group(demand: 20, accepted: 20, taken: 20, rate: 1000, now: .milliseconds(500)).share < 0.03)
    }

    @Test func aQuietInstanceHoldsNoShare() async {
        // One instance with little to send, one with a backlog: the busy one gets what the quiet
        // one does not use.
        var sim = GroupSimulation(quota: Self.quota, backlogs: [50, 30_000])
        await sim.run(until: .seconds(20))
        let settled = sim.acceptedPerSecond(from: .seconds(5), to: .seconds(20)) / Self.quota
        #expect(settled >= 0.9, "\(settled)")
    }

    /// One instance whose items come in bursts (200 every `every` ms: a quiet category's), another
    /// draining a backlog, reports 100 ms late, answers after `roundTrip` ms. Over the last 30 s of
    /// 40 the hub took 0.77-0.93x of the quota before, 0.89-0.95x now: the shares added up to
    /// less than the rate (each instance split with its own demand of the moment), and the busy
    /// instance took up the bursty one's untried rate while a burst waited. The bursts wait longer
    /// for it, as the others make room a report later: 14-25 ms more at the median.
    @Test(arguments: [800, 1000, 1200], [1, 30])
    func anInstanceWhoseItemsComeInBurstsLeavesTheRestOfTheQuotaToTheOthers(every: Int, roundTrip: Int) async {
        var sim = GroupSimulation(quota: Self.quota, backlogs: [0, 40_000])
        sim.roundTrip = .milliseconds(Int64(roundTrip))
        sim.delay = .milliseconds(100)
        sim.instances[0].arrivals = (every: .milliseconds(Int64(every)), items: 200)
        await sim.run(until: .seconds(40))
        let used = sim.acceptedPerSecond(from: .seconds(10), to: .seconds(40)) / Self.quota
        let waits = sim.instances[0].waits.sorted()
        let median = waits.isEmpty ? Duration.seconds(40) : waits[waits.count / 2]
        let throttled = sim.throttledShare(from: .seconds(1), to: .seconds(40))
        #expect(used >= 0.85, "from 10 to 40 s: \(used)")
        #expect(median <= .milliseconds(500), "the bursts' median wait: \(median)")
        #expect(throttled <= 0.02, "throttled after the first second: \(throttled)")
    }

    /// Two instances draining backlogs of `small` and 40,000 items at the quota: when the small one
    /// runs dry, the other takes its share as the small one's demand (its last second's rate)
    /// fades, within a second: 0.80x of the quota over the two seconds after. Counting its last
    /// 300 ms made that 0.89x, but an instance whose items come in bursts then lost its share
    /// between them (`HubPacer.demand`). Reports 100 ms late, answers after 1 ms.
    @Test(arguments: [3000, 5000])
    func anInstanceWhoseBacklogRunsDryGivesItsShareBackWithinASecond(small: Int) async {
        var sim = GroupSimulation(quota: Self.quota, backlogs: [small, 40_000])
        sim.delay = .milliseconds(100)
        var dryAt = Duration.zero
        while sim.instances[0].backlog > 0, sim.now < .seconds(60) {
            dryAt = sim.now + .milliseconds(100)
            await sim.run(until: dryAt)
        }
        await sim.run(until: dryAt + .seconds(2))
        let before = sim.acceptedPerSecond(from: dryAt - .seconds(3), to: dryAt) / Self.quota
        let after = sim.acceptedPerSecond(from: dryAt, to: dryAt + .seconds(2)) / Self.quota
        #expect(sim.instances[0].backlog == 0, "ran dry by \(dryAt)")
        #expect(before >= 0.95, "the three seconds before, both sending: \(before)")
        #expect(after >= 0.75, "the two seconds after it ran dry: \(after)")
    }

    /// Found by a randomised search of group runs (below): the first two throttled 48% and 46%
    /// of requests before. The third guards the search's idle-peer case (a busy instance took an
    /// idle peer's untried rate up: 11% there, reports 72 ms late, with only the other two fixes;
    /// at this test's timing it passes with the old pacer too). At a round trip of 30 ms (a real hub's, not loopback's 1 ms) answers
    /// lag their sends, and a cut one instance judged while the other moved the hub's rate was
    /// taken for sporadic throttling, a verdict that then confirmed itself (twice the quota
    /// throttles half the sends); an idle instance's untried rate was taken up by a busy one.
    @Test(arguments: [
        (backlogs: [23_737, 32_491], hearsFrom: [0, 0]),
        (backlogs: [24_324, 29_209], hearsFrom: [3, 0]),
        (backlogs: [33_212, 600], hearsFrom: [0, 0]),
    ])
    func noThrottleStormAtARealHubsRoundTrip(backlogs: [Int], hearsFrom: [Int]) async {
        var sim = GroupSimulation(quota: Self.quota, backlogs: backlogs)
        sim.roundTrip = .milliseconds(33)
        sim.delay = .milliseconds(250)
        for i in sim.instances.indices { sim.instances[i].hearsFrom = .seconds(Int64(hearsFrom[i])) }
        await sim.run(until: .seconds(30))
        let throttled = sim.throttledShare(from: .seconds(1), to: .seconds(30))
        let settled = sim.acceptedPerSecond(from: .seconds(10), to: .seconds(20)) / Self.quota
        #expect(throttled <= 0.02, "throttled after the first second: \(throttled)")
        #expect(settled >= 0.9, "from 10 to 20 s: \(settled)")
    }

    /// Group runs drawn at random, the same on every run: 2 to 4 instances, backlogs from none to
    /// 40,000, items arriving in bursts, rebalance stalls, late joins, the exchange heard after up
    /// to 3 s, round trips of 1 to 40 ms and reports 5 to 400 ms late. Before, 9 of these 20 runs
    /// throttled more than 2% of requests, the worst 21%.
    @Test func noThrottleStormInRandomGroups() async {
        var shares: [Double] = []
        for seed in 0..<20 {
            var random = SeededGenerator(seed: UInt64(seed) &* 7919)
            var sim = GroupSimulation.random(using: &random)
            await sim.run(until: .seconds(40))
            shares.append(sim.throttledShare(from: .seconds(1), to: .seconds(40)))
        }
        let storms = shares.enumerated().filter { $0.element > 0.10 }
        let over2 = shares.count { $0 > 0.02 }
        #expect(storms.isEmpty, "over 10% throttled (seed, share): \(storms)")
        #expect(over2 <= 2, "over 2% throttled: \(over2) of 20: \(shares.sorted().suffix(4))")
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
        #expect(book.group(demand: 5000, accepted: 500, taken: 500, rate: 1000, now: .zero) == HubPacer.Group())
        book.heard(
            QuotaReport(instance: "c", hub: "hub", accepted: 400, taken: 410, demand: 5000, rate: 1000),
            now: .zero
        )
        #expect(
            book.group(demand: 5000, accepted: 300, taken: 500, rate: 1000, now: .seconds(1))
                == HubPacer.Group(
                    share: 0.5,
                    othersAccepted: 400,
                    othersTaken: 410,
                    othersRate: 1000,
                    newestSince: .zero
                )
        )
        #expect(
            book.group(demand: 5000, accepted: 500, taken: 500, rate: 1000, now: .seconds(3))
                == HubPacer.Group(known: false),
            "not heard from for 3 s (nor its own report)"
        )
    }

    @Test func theRateOfAnIdlePeerIsNotTakenUp() {
        var book = QuotaShare(instance: "a", hub: "hub")
        // b has nothing waiting (demand = what it sends): its rate grew untried. c's sends wait.
        book.heard(QuotaReport(instance: "b", hub: "hub", accepted: 5, taken: 5, demand: 5, rate: 2155), now: .zero)
        #expect(book.group(demand: 5000, accepted: 900, taken: 900, rate: 1000, now: .zero).othersRate == nil)
        #expect(book.group(demand: 5000, accepted: 0, taken: 0, rate: nil, now: .zero).othersRate == nil)
        // c's sends wait (a burst of its items came), and it has accepted 150 a second lately:
        // its rate grew between bursts, untried.
        let c = QuotaReport(instance: "c", hub: "hub", accepted: 150, taken: 150, demand: 350, rate: 3285)
        book.heard(c, now: .zero)
        #expect(book.group(demand: 5000, accepted: 900, taken: 900, rate: 1000, now: .zero).othersRate == nil)
        // Taken up by one that had fewer accepted, or by one not paced.
        #expect(book.group(demand: 50, accepted: 100, taken: 100, rate: 1000, now: .zero).othersRate == 3285)
        #expect(book.group(demand: 5000, accepted: 900, taken: 900, rate: nil, now: .zero).othersRate == 3285)
    }

    /// Two instances split the same reports: a, whose items come in bursts, said 400 a second
    /// while one waited and has sent it since (its demand now 200); b drains a backlog. Each split
    /// counts a's ask as b has it, so the shares add up to the whole rate.
    @Test func sharesAddUpWhenAnInstancesDemandMovedSinceItsReport() {
        let reports = [
            QuotaReport(instance: "a", hub: "hub", accepted: 200, taken: 200, demand: 400, rate: 1000),
            QuotaReport(instance: "b", hub: "hub", accepted: 600, taken: 600, demand: 5000, rate: 1000),
        ]
        var a = QuotaShare(instance: "a", hub: "hub"), b = QuotaShare(instance: "b", hub: "hub")
        for report in reports {
            a.heard(report, now: .zero)
            b.heard(report, now: .zero)
        }
        let now = Duration.milliseconds(100)
        let shareA = a.group(demand: 200, accepted: 200, taken: 200, rate: 1000, now: now).share
        let shareB = b.group(demand: 5000, accepted: 600, taken: 600, rate: 1000, now: now).share
        #expect(abs(shareA - 0.5) < 1e-9, "400 a second with headroom: \(shareA)")
        #expect(abs(shareA + shareB - 1) < 1e-9, "\(shareA) + \(shareB)")
        // Until the exchange carries its own report back, an instance splits with what it has,
        // and so it does once that report is a second old (the exchange lags on its side).
        var fresh = QuotaShare(instance: "a", hub: "hub")
        fresh.heard(reports[1], now: .zero)
        #expect(abs(fresh.group(demand: 200, accepted: 200, taken: 200, rate: 1000, now: now).share - 0.25) < 1e-9)
        a.heard(reports[1], now: .seconds(1))
        #expect(abs(a.group(demand: 200, accepted: 200, taken: 200, rate: 1000, now: .seconds(1)).share - 0.25) < 1e-9)
        // A report that comes back after a newer one is not the newest ask.
        var ordered = QuotaShare(instance: "a", hub: "hub")
        let older = ordered.stamp(reports[0], now: .zero)
        let newer = ordered.stamp(
            QuotaReport(instance: "a", hub: "hub", accepted: 0, taken: 0, demand: 0, rate: 1000),
            now: now
        )
        ordered.heard(reports[1], now: now)
        ordered.heard(newer, now: now)
        ordered.heard(older, now: now)
        #expect(ordered.group(demand: 800, accepted: 0, taken: 0, rate: 1000, now: now).share < 1e-9)
    }

    @Test func whoElseSendsIsKnownOnceTheExchangeCarriesThisInstancesOwnReport() {
        var book = QuotaShare(instance: "a", hub: "hub")
        let own = QuotaReport(instance: "a", hub: "hub", accepted: 0, taken: 0, demand: 0, rate: nil)
        #expect(
            book.group(demand: 0, accepted: 0, taken: 0, rate: nil, now: .zero).known == false,
            "nothing carried yet"
        )
        book.heard(own, now: .milliseconds(300))
        #expect(book.group(demand: 0, accepted: 0, taken: 0, rate: nil, now: .milliseconds(400)).known)
        // The exchange stops carrying it while others may still send: not known any more.
        book.heard(
            QuotaReport(instance: "b", hub: "other", accepted: 0, taken: 0, demand: 0, rate: nil),
            now: .seconds(3)
        )
        #expect(book.group(demand: 0, accepted: 0, taken: 0, rate: nil, now: .seconds(4)).known == false)
        // Nothing at all for 10 s since the first split: the exchange works in neither direction.
        var silent = QuotaShare(instance: "a", hub: "hub")
        #expect(silent.group(demand: 0, accepted: 0, taken: 0, rate: nil, now: .seconds(1)).known == false)
        #expect(silent.group(demand: 0, accepted: 0, taken: 0, rate: nil, now: .seconds(11)).known)
    }

    @Test func aLeavingReportGivesTheShareBackAtOnce() {
        var book = QuotaShare(instance: "a", hub: "hub")
        book.heard(
            QuotaReport(instance: "b", hub: "hub", accepted: 500, taken: 500, demand: 5000, rate: 1000),
            now: .zero
        )
        #expect(book.group(demand: 5000, accepted: 500, taken: 500, rate: 1000, now: .milliseconds(100)).share == 0.5)
        book.heard(
            QuotaReport(instance: "b", hub: "hub", accepted: 500, taken: 500, demand: 5000, rate: 1000, leaving: true),
            now: .milliseconds(200)
        )
        // Its share is back at once; what it sent counts in the hub's last second while it is in
        // it (at a cut, and nowhere else: it is not one of the others).
        #expect(book.group(demand: 5000, accepted: 500, taken: 500, rate: 1000, now: .milliseconds(250)).share == 1)
        #expect(
            book.group(demand: 5000, accepted: 500, taken: 500, rate: 1000, now: .milliseconds(450))
                == HubPacer.Group(departedAccepted: 375, known: false),
            "alone as far as it knows, but its own report never came back"
        )
        #expect(book.others(now: .milliseconds(450)) == 0)
        // The same last report again (a producer's retry) does not start its second again.
        book.heard(
            QuotaReport(instance: "b", hub: "hub", accepted: 500, taken: 500, demand: 5000, rate: 1000, leaving: true),
            now: .milliseconds(700)
        )
        #expect(
            book.group(demand: 5000, accepted: 500, taken: 500, rate: 1000, now: .milliseconds(700)).departedAccepted
                == 250
        )
        #expect(
            book.group(demand: 5000, accepted: 500, taken: 500, rate: 1000, now: .milliseconds(1200))
                == HubPacer.Group(known: false)
        )
    }

    /// A cut just after another instance left measured only those still there, though the one
    /// that left had taken its share of the hub for most of that second: 0.78-0.84x of the quota
    /// for the 6 s after (0.82x over 7 s, now 0.97x; 0.91-0.92x for 15 s on Tansu). With reports
    /// 400 ms late the leaver's second is over before the one left hears of it, and the one left
    /// cuts from a second in which it was still climbing to the whole rate: probed past as a lone
    /// instance's cut (over half a minute), that held 0.91x from 8 to 20 s after the leave; a cut
    /// measured while the rate climbed is probed past within 5 s.
    @Test(arguments: [(50, 21, 28, 30), (400, 28, 40, 40)])
    func aCutJustAfterALeaveCountsWhatTheOneThatLeftHadSent(
        reportsLate: Int64,
        from: Int64,
        to: Int64,
        until: Int64
    ) async {
        var sim = GroupSimulation(quota: Self.quota, backlogs: [0, 40_000, 40_000])
        sim.roundTrip = .milliseconds(30)
        sim.delay = .milliseconds(reportsLate)
        sim.instances[1].leaveAt = .seconds(20)
        await sim.run(until: .seconds(until))
        let after = sim.acceptedPerSecond(from: .seconds(from), to: .seconds(to)) / Self.quota
        #expect(after >= 0.95, "from \(from - 20) to \(to - 20) s after the leave: \(after)")
        #expect(sim.throttledShare(from: .zero, to: .seconds(until)) <= 0.02)
    }

    /// The benchmark's stop case: three instances with this skew of 60,000 items, the hub's burst
    /// allowance 50 ms of its quota (as nginx's), reports 100 ms late. The two small backlogs run
    /// dry early; at 30 s the one holding every item left stops, and its partitions reach one or
    /// both of the others 6 s later (a rebalance). Idle meanwhile, their rates grew untried to
    /// 1.2x the quota; sent at that, the first second was throttled, and the cut measured from it
    /// (mostly sent at half the share) held 0.81x of the quota over the 5 s after the hand-over
    /// and 0.86x over 10. A rate that grew while the hub was quiet resumes at one the hub took.
    /// With 60 items each, the small ones sent all theirs in the cold start's first second and
    /// doubled untried from the busiest's rate after: 0.81-0.87x over the 5 s after the
    /// hand-over, 3% throttled, until an instance with nothing sent took the busiest's rate.
    @Test(arguments: [
        ([0], 0, 2700), ([0, 1], 0, 2700), ([0], 1, 2700), ([0, 1], 1, 2700), ([0, 1], 0, 60), ([0, 1], 1, 60),
    ])
    func theOnesLeftResumeAtARateTheHubTookWhenALeaversPartitionsReachThem(
        to: [Int],
        hearsFrom: Int64,
        small: Int
    ) async {
        var sim = GroupSimulation(quota: Self.quota, backlogs: [small, small, 60_000 - 2 * small])
        sim.quota = SimulatedQuota(rate: Self.quota, burst: Self.quota / 20)
        sim.delay = .milliseconds(100)
        sim.roundTrip = .milliseconds(5)
        for i in sim.instances.indices { sim.instances[i].hearsFrom = .seconds(hearsFrom) }
        sim.instances[2].leaveAt = .seconds(30)
        sim.instances[2].handsOverTo = to
        await sim.run(until: .seconds(46))
        let five = sim.acceptedPerSecond(from: .seconds(36), to: .seconds(41)) / Self.quota
        let ten = sim.acceptedPerSecond(from: .seconds(36), to: .seconds(46)) / Self.quota
        #expect(sim.instances[0].backlog + sim.instances[1].backlog > 10_000, "still sending the leaver's items")
        #expect(five >= 0.92, "the 5 s after the hand-over: \(five)")
        #expect(ten >= 0.95, "the 10 s after: \(ten)")
        #expect(sim.throttledShare(from: .seconds(36), to: .seconds(46)) <= 0.02)
    }

    /// Two instances with backlogs, reports 400 ms late; one leaves at 20 s. At 29 s the one left
    /// probes past its level and cuts; 0.8 s later it cuts again, from its accepted sends over
    /// those 0.8 s, the first 30 ms of which (a round trip) brought no answers: 955 a second for a
    /// quota of 1,000. Held there for half a minute as an instance alone, that was 0.93x of the
    /// quota from 8 to 20 s after the leave; a cut within a second of the one before is probed
    /// past within 5 s.
    @Test func theOneLeftProbesSoonPastACutMadeJustAfterAnother() async {
        var sim = GroupSimulation(quota: Self.quota, backlogs: [40_000, 40_000])
        sim.roundTrip = .milliseconds(30)
        sim.delay = .milliseconds(400)
        sim.instances[1].leaveAt = .seconds(20)
        await sim.run(until: .seconds(40))
        let after = sim.acceptedPerSecond(from: .seconds(28), to: .seconds(40)) / Self.quota
        #expect(after >= 0.95, "from 8 to 20 s after the leave: \(after)")
        #expect(sim.throttledShare(from: .zero, to: .seconds(40)) <= 0.02)
    }
}
