import Kafka
import News
import PropertyBased
import Testing

@testable import Broadcast

/// Breaking news first, categories in turn, backlogs kept in Kafka, stale sends spending no token:
/// the engine driven event by event on a test clock.
@Suite struct PriorityLaneTests {
    let sports = (0..<3).map { TopicPartition(topic: "news.sports", partition: Int32($0)) }
    let world = TopicPartition(topic: "news.world", partition: 0)

    func engine(_ tweak: (inout Engine.Configuration) -> Void = { _ in }) -> Engine {
        var c = Engine.Configuration()
        c.maxInFlight = 1
        tweak(&c)
        return Engine(configuration: c)
    }

    /// Delivers whatever is running, one send at a time, and returns the order sends started in.
    func drain(_ e: inout Engine, _ done: inout Performed, now: Duration = .zero, count: Int) -> [String] {
        var order: [String] = []
        for _ in 0..<count {
            guard let (id, send) = done.sends.last, !order.contains(send) else { break }
            order.append(send)
            done.add(e.sendFinished(id, .delivered, now: now))
        }
        return order
    }

    @Test func aBreakingItemOvertakesEveryQueuedSendOfLowerPriority() {
        var e = engine()
        var done = Performed(e.assigned(sports + [world], now: .zero))
        done.add(
            e.received(
                (0..<30).map { record(sports[0], $0, sends: ["bulk\($0)"], priority: .bulk) }
                    + (0..<5).map { record(sports[1], $0, sends: ["normal\($0)"]) },
                now: .zero
            )
        )
        #expect(done.sends.map(\.send) == ["normal0"], "normal before bulk from the first start")
        done.add(e.received([record(world, 0, sends: ["breaking"], priority: .breaking)], now: .zero))
        let order = drain(&e, &done, count: 8)
        #expect(order == ["normal0", "breaking", "normal1", "normal2", "normal3", "normal4", "bulk0", "bulk1"])
    }

    /// What the instance tells the others sharing its hub: the breaking sends waiting, part of
    /// its demand, and none once they have started.
    @Test func theBreakingSendsWaitingAreItsUrgentAsk() {
        var e = engine()
        var done = Performed(e.assigned(sports + [world], now: .zero))
        done.add(
            e.received(
                (0..<10).map { record(sports[0], $0, sends: ["bulk\($0)"], priority: .bulk) }
                    + (0..<3).map { record(world, $0, sends: ["breaking\($0)"], priority: .breaking) },
                now: .zero
            )
        )
        // One in flight (a breaking one), twelve waiting, two of them breaking.
        #expect(e.paceUrgent() == 2)
        #expect(e.paceDemand(now: .zero) >= 12)
        _ = drain(&e, &done, count: 3)
        #expect(e.paceUrgent() == 0)
    }

    @Test func withinAPriorityTheCategoriesTakeTurnsAndThenTheirPartitions() {
        var e = engine()
        var done = Performed(e.assigned(sports + [world], now: .zero))
        // A backlog of one Sports partition arrives first; World's sends alternate with Sports',
        // and Sports' turns alternate between its partitions.
        done.add(e.received((0..<20).map { record(sports[0], $0, sends: ["a\($0)"]) }, now: .zero))
        done.add(
            e.received(
                [
                    record(world, 0, sends: ["w0"]), record(world, 1, sends: ["w1"]),
                    record(sports[2], 0, sends: ["c0"]),
                ],
                now: .zero
            )
        )
        let order = drain(&e, &done, count: 7)
        #expect(order == ["a0", "a1", "w0", "c0", "w1", "a2", "a3"])
    }

    @Test func aCategoryWithManyBusyPartitionsGetsOneTurnInTwoAgainstAnother() {
        var e = engine()
        var done = Performed(e.assigned(sports + [world], now: .zero))
        for p in sports {
            done.add(e.received((0..<10).map { record(p, $0, sends: ["s\(p.partition)-\($0)"]) }, now: .zero))
        }
        done.add(e.received((0..<5).map { record(world, $0, sends: ["w\($0)"]) }, now: .zero))
        let order = drain(&e, &done, count: 11).dropFirst()
        #expect(order.filter { $0.hasPrefix("w") } == ["w0", "w1", "w2", "w3", "w4"])
        #expect(zip(order, order.dropFirst()).allSatisfy { !($0.hasPrefix("w") && $1.hasPrefix("w")) })
        #expect(order.count { $0.hasPrefix("s") } == 5, "\(order)")
    }

    @Test func bulkGetsOneStartInTwentyUnderAFloodOfBreakingNews() {
        var e = engine()
        var done = Performed(e.assigned(sports + [world], now: .zero))
        done.add(e.received((0..<5).map { record(sports[0], $0, sends: ["bulk\($0)"], priority: .bulk) }, now: .zero))
        done.add(
            e.received((0..<100).map { record(world, $0, sends: ["breaking\($0)"], priority: .breaking) }, now: .zero)
        )
        let order = drain(&e, &done, count: 60)
        let bulkStarts = order.indices.filter { order[$0].hasPrefix("bulk") }
        // bulk0 went first (alone then); after that, one start in twenty while breaking waits.
        #expect(bulkStarts == [0, 20, 40], "\(order)")
    }

    @Test func aThrottledSendGoesAgainAheadOfLowerPriorities() {
        var e = engine()
        var done = Performed(e.assigned(sports + [world], now: .zero))
        done.add(
            e.received(
                [record(world, 0, sends: ["breaking"], priority: .breaking)]
                    + (0..<200).map { record(sports[0], $0, sends: ["bulk\($0)"], priority: .bulk) },
                now: .zero
            )
        )
        done.add(e.sendFinished(done.id(of: "breaking")!, .throttled(retryAfter: .seconds(1)), now: .zero))
        // Bulk sends go while it waits its Retry-After (each delivered as it starts).
        var now = Duration.zero
        var started: [(at: Duration, send: String)] = []
        var seen = 1
        while !started.contains(where: { $0.send == "breaking" }), now < .seconds(10) {
            done.add(e.tick(now: now))
            while seen < done.sends.count {
                let (id, send) = done.sends[seen]
                seen += 1
                started.append((now, send))
                done.add(e.sendFinished(id, .delivered, now: now))
            }
            now += .milliseconds(50)
        }
        let again = started.firstIndex { $0.send == "breaking" }
        #expect(again != nil, "\(started.prefix(5)) … \(started.count) starts, \(done.sends.count) sends")
        if let again {
            #expect(started[again].at >= .seconds(1), "not before its Retry-After")
            #expect(
                !started.contains { $0.at >= .seconds(1) && $0.send != "breaking" && $0.at < started[again].at },
                "no bulk send started between its Retry-After and its own start"
            )
        }
    }

    @Test func aHeldSendKeepsItsPlaceAmongTheOthersOfItsPartition() {
        var e = engine { $0.maxInFlight = 3 }
        var done = Performed(e.assigned([world], now: .zero))
        done.add(e.received((0..<6).map { record(world, $0, sends: ["s\($0)"]) }, now: .zero))
        // s2, s1, s0 end in that order, the hub unavailable: they go again oldest first.
        for s in ["s2", "s1", "s0"] {
            done.add(e.sendFinished(done.id(of: s)!, .hubUnavailable(reason: "test"), now: .zero))
        }
        done.add(e.tick(now: .seconds(3)))
        #expect(done.sends.last?.send == "s0", "the probe is the oldest")
        done.add(e.sendFinished(done.id(of: "s0")!, .delivered, now: .seconds(3)))
        #expect(done.sends.suffix(3).map(\.send) == ["s1", "s2", "s3"])
    }

    @Test func aPartitionWithEnoughWaitingIsPausedAndResumedAtHalfWhileTheOthersAreStillFetched() {
        // 10 sends a second over two busy partitions: a lane lasts 2 s at 100 sends (the floor).
        var e = engine {
            $0.maxInFlight = 4
            $0.pacing.maxRate = 10
            $0.maxQueued = 1000
        }
        var done = Performed(e.started(now: .zero))
        done.add(e.assigned([sports[0], world], now: .zero))
        done.add(e.received((0..<150).map { record(sports[0], $0, sends: ["a\($0)"], priority: .bulk) }, now: .zero))
        #expect(done.paused == [sports[0]])
        #expect(e.pausedPartitions == [sports[0]])
        let fetchesBefore = done.fetches
        done.add(e.received([record(world, 0, sends: ["w0"], priority: .breaking)], now: .zero))
        #expect(done.fetches > fetchesBefore, "records of the others are still fetched")
        #expect(done.paused == [sports[0]], "the world partition has one send waiting, far below its limit")
        // Deliver at the pace until the sports lane is down to half its limit.
        var now = Duration.zero
        var finished = Set<Engine.JobID>()
        while done.resumed.isEmpty, now < .seconds(60) {
            now += .milliseconds(100)
            for (id, _) in done.sends where !finished.contains(id) {
                finished.insert(id)
                done.add(e.sendFinished(id, .delivered, now: now))
            }
            done.add(e.tick(now: now))
        }
        #expect(done.resumed == [sports[0]])
        #expect(e.queued(.bulk) <= 50)
        #expect(e.queued(.bulk) >= 40, "resumed with a few seconds of sends left, not when empty")
    }

    @Test func atAPaceTooHighForLanesToLastNothingIsPaused() {
        var e = engine {
            $0.maxInFlight = 64
            $0.maxQueued = 1000
        }
        var done = Performed(e.started(now: .zero))
        done.add(e.assigned([sports[0]], now: .zero))
        // Unpaced and not yet measured: no pausing at the cold start.
        done.add(e.received((0..<900).map { record(sports[0], $0, sends: ["a\($0)"]) }, now: .zero))
        #expect(done.paused.isEmpty)
        // A second of 5,000 sends a second later: a lane would need 10,000 to last, over the cap.
        var now = Duration.zero
        for step in 1...20 {
            now = .milliseconds(50 * step)
            for (id, _) in done.sends.suffix(64) { done.add(e.sendFinished(id, .delivered, now: now)) }
            done.add(
                e.received(
                    (0..<250).map { record(sports[0], Int64(1000 * step) + $0, sends: ["b\(step)-\($0)"]) },
                    now: now
                )
            )
        }
        #expect(e.laneLimit(now: now) == nil)
        #expect(done.paused.isEmpty)
    }

    @Test func aStaleSendStartsWithoutAToken() {
        var e = engine {
            $0.maxInFlight = 8
            $0.pacing.maxRate = 1
        }
        var done = Performed(e.assigned([world], now: .zero))
        done.add(
            e.received((0..<3).map { record(world, $0, sends: ["s\($0)"], freshFor: .milliseconds(500)) }, now: .zero)
        )
        #expect(done.sends.map(\.send) == ["s0"], "one token a second")
        done.add(e.tick(now: .milliseconds(400)))
        #expect(done.sends.count == 1)
        done.add(e.tick(now: .milliseconds(600)))
        #expect(
            done.sends.map(\.send) == ["s0", "s1", "s2"],
            "stale: started at once for the sender to dead-letter, no token spent"
        )
        // The next fresh send still gets the token the stale ones did not take.
        done.add(e.received([record(world, 3, sends: ["s3"])], now: .milliseconds(600)))
        done.add(e.tick(now: .milliseconds(1100)))
        #expect(done.sends.last?.send == "s3")
    }
}

/// The lanes against a model: a plain list of what waits, with the rules written out.
@Suite struct SendLanesPropertyTests {
    struct Job: LaneJob {
        let age: Int
        let priority: Priority
        let slot: Int
    }

    @Test func popsFollowPriorityReserveTurnsAndAge() async {
        await propertyCheck(count: 300, input: Gen.int(in: 0...999).array(of: 1...300)) { ops in
            var lanes = SendLanes<Job>(reserveEvery: 4)
            for slot in 0..<4 { lanes.register(slot: slot, group: slot % 2) }
            var waiting: [Job] = []
            var nextAge = 0
            /// Starts in a row that passed over each priority while it had jobs waiting.
            var passedOver = [Priority: Int]()
            var violations: [String] = []
            for op in ops {
                let priority = Priority(rawValue: op % 3)!
                let slot = (op / 3) % 4
                switch op / 100 {
                case 0...5:
                    nextAge += 1
                    let job = Job(age: nextAge, priority: priority, slot: slot)
                    lanes.append(job)
                    waiting.append(job)
                case 6:
                    lanes.removeAll(slot: slot)
                    waiting.removeAll { $0.slot == slot }
                    for p in Priority.allCases where !waiting.contains(where: { $0.priority == p }) {
                        passedOver[p] = 0
                    }
                default:
                    guard let next = lanes.nextPriority(), let job = lanes.popFirst(next) else {
                        if !waiting.isEmpty { violations.append("nothing popped with \(waiting.count) waiting") }
                        continue
                    }
                    guard let index = waiting.firstIndex(where: { $0.age == job.age }) else {
                        violations.append("popped \(job.age), which was not waiting")
                        continue
                    }
                    waiting.remove(at: index)
                    let mostUrgent = waiting.map(\.priority).max().map { max($0, job.priority) } ?? job.priority
                    if job.priority < mostUrgent && (passedOver[job.priority] ?? 0) < 3 {
                        violations.append("\(job.priority) started before \(mostUrgent) without its reserve")
                    }
                    // Within its partition and priority, the oldest goes first.
                    if waiting.contains(where: {
                        $0.slot == job.slot && $0.priority == job.priority && $0.age < job.age
                    }) {
                        violations.append("\(job.age) overtook an older one of its lane")
                    }
                    for p in Priority.allCases where p != job.priority {
                        passedOver[p] = waiting.contains(where: { $0.priority == p }) ? (passedOver[p] ?? 0) + 1 : 0
                    }
                    passedOver[job.priority] = 0
                    // At most reserveEvery: when both lower ones are due, one goes a start later.
                    if passedOver.values.contains(where: { $0 > 4 }) {
                        violations.append("a priority passed over 5 times: \(passedOver)")
                    }
                }
                if lanes.count != waiting.count { violations.append("count \(lanes.count), model \(waiting.count)") }
            }
            #expect(violations.isEmpty, "\(violations.prefix(3))")
        }
    }

    @Test func groupsTakeTurnsAndThenTheirSlots() {
        var lanes = SendLanes<Job>()
        // Slots 0 and 1 are one topic, 2 another.
        for (slot, group) in [(0, 0), (1, 0), (2, 1)] { lanes.register(slot: slot, group: group) }
        var age = 0
        for slot in [0, 0, 0, 1, 2, 2] {
            age += 1
            lanes.append(Job(age: age, priority: .normal, slot: slot))
        }
        var slots: [Int] = []
        while let p = lanes.nextPriority(), let job = lanes.popFirst(p) { slots.append(job.slot) }
        #expect(slots == [0, 2, 1, 2, 0, 0])
    }
}
