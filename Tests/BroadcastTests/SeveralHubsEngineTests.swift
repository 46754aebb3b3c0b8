import Broadcast
import Kafka
import Testing

/// One engine sending to two hubs: each hub is held, probed, paced and limited on its own, and
/// the offsets of a partition whose items go to both stay correct.
@Suite struct SeveralHubsEngineTests {
    let sports = TopicPartition(topic: "news.sports", partition: 0)

    func engine(_ tweak: (inout Engine.Configuration) -> Void = { _ in }) -> Engine {
        var c = Engine.Configuration()
        c.maxInFlight = 4
        c.probeInterval = .seconds(2)
        c.maxQueued = 1000
        c.minLaneDepth = 10
        tweak(&c)
        return Engine(configuration: c)
    }

    @Test func aHubRefusingCredentialsHoldsOnlyItsOwnSends() {
        var e = engine()
        var done = Performed(e.started(now: .zero))
        done.add(e.assigned([p0, sports], now: .zero))
        // World to hub 0, Sports to hub 1.
        done.add(e.received((0..<8).map { record(p0, $0, sends: ["w\($0)"]) }, now: .zero))
        done.add(e.received((0..<8).map { record(sports, $0, sends: ["s\($0)"], hub: 1) }, now: .zero))
        #expect(done.sends.map(\.send) == ["w0", "w1", "w2", "w3", "s0", "s1", "s2", "s3"], "each hub its own 4 slots")

        // Hub 1 refuses its credentials.
        for s in ["s0", "s1", "s2", "s3"] {
            done.add(
                e.sendFinished(done.id(of: s)!, .hubUnavailable(reason: "unauthorized (HTTP 401)"), now: .seconds(1))
            )
        }
        #expect(e.hub(1) == .unavailable(since: .seconds(1), reason: "unauthorized (HTTP 401)"))
        #expect(e.hub(0) == .available)
        #expect(done.hubUnavailable == 1)

        // Hub 0 goes on: every World send is delivered while hub 1 is held.
        var delivered: Set<String> = []
        while let next = done.sends.first(where: { $0.send.hasPrefix("w") && !delivered.contains($0.send) }) {
            delivered.insert(next.send)
            done.add(e.sendFinished(next.id, .delivered, now: .seconds(2)))
        }
        #expect(Set(done.sends.map(\.send).filter { $0.hasPrefix("w") }).count == 8)
        #expect(e.committable.offset(of: p0) == 8)
        #expect(e.committable.offset(of: sports) == nil, "nothing of Sports finished")
        #expect(done.sends.filter { $0.send.hasPrefix("s") }.count == 4, "hub 1's sends wait for its probe")

        // Its probe is due: one send goes, and when it is accepted the rest follow.
        done.add(e.tick(now: .seconds(3)))
        let probes = done.sends.filter { $0.send.hasPrefix("s") }.dropFirst(4)
        #expect(probes.map(\.send) == ["s0"], "one probe, the first held send")
        done.add(e.sendFinished(probes.first!.id, .delivered, now: .seconds(3)))
        #expect(e.hub(1) == .available)
        #expect(done.hubAvailable == 1)
        let resumed = done.sends.filter { $0.send.hasPrefix("s") }.dropFirst(5).map(\.send)
        #expect(resumed == ["s1", "s2", "s3", "s4"], "its four slots again: the held sends first, in order")
    }

    @Test func aPartitionWhoseItemsGoToBothHubsCommitsOnlyPastFinishedOnes() {
        var e = engine()
        var done = Performed(e.assigned([p0], now: .zero))
        // Offsets 0, 2, 4 to hub 0; 1, 3 to hub 1.
        done.add(e.received((0..<5).map { record(p0, $0, sends: ["m\($0)"], hub: Int($0 % 2)) }, now: .zero))
        #expect(done.sends.count == 5)
        done.add(e.sendFinished(done.id(of: "m1")!, .hubUnavailable(reason: "unauthorized (HTTP 401)"), now: .zero))
        for s in ["m0", "m2", "m4"] { done.add(e.sendFinished(done.id(of: s)!, .delivered, now: .zero)) }
        #expect(e.committable.offset(of: p0) == 1, "offset 1 waits for hub 1, so nothing past it commits")
        done.add(e.sendFinished(done.id(of: "m3")!, .delivered, now: .zero))
        #expect(e.hub(1) == .available, "m3 was accepted: hub 1 answers again")
        // m1 went again (held, then started as soon as the hub answered) and is delivered.
        let again = done.sends.filter { $0.send == "m1" }
        #expect(again.count == 2)
        done.add(e.sendFinished(again[1].id, .delivered, now: .zero))
        #expect(e.committable.offset(of: p0) == 5)
    }

    @Test func aHeldHubsPartitionsArePausedAndTheOthersKeepFetching() {
        var e = engine { $0.maxQueued = 40 }
        var done = Performed(e.started(now: .zero))
        done.add(e.assigned([p0, sports], now: .zero))
        done.add(e.received([record(sports, 0, sends: ["s0"], hub: 1)], now: .zero))
        done.add(e.sendFinished(done.id(of: "s0")!, .hubUnavailable(reason: "unauthorized (HTTP 401)"), now: .zero))
        // Sports fills its lane while hub 1 is held: paused at the minimum depth.
        done.add(e.received((1..<30).map { record(sports, $0, sends: ["s\($0)"], hub: 1) }, now: .zero))
        #expect(done.paused == [sports])
        #expect(e.queued >= 30)
        // World still comes in (the fetch goes on past Sports' held sends) and goes out.
        let fetchesBefore = done.fetches
        done.add(e.received((0..<20).map { record(p0, $0, sends: ["w\($0)"]) }, now: .zero))
        #expect(done.fetches > fetchesBefore, "still fetching")
        #expect(done.sends.filter { $0.send.hasPrefix("w") }.count == 4)
        #expect(!done.paused.contains(p0))
        // Hub 1 back (its probe accepted): Sports drains and is resumed.
        done.add(e.tick(now: .seconds(3)))
        let probe = done.sends.last { $0.send.hasPrefix("s") }!
        done.add(e.sendFinished(probe.id, .delivered, now: .seconds(3)))
        var rounds = 0
        var finished: Set<Int> = [probe.id]
        while let running = done.sends.last(where: { $0.send.hasPrefix("s") && !finished.contains($0.id) }),
            rounds < 100
        {
            rounds += 1
            finished.insert(running.id)
            done.add(e.sendFinished(running.id, .delivered, now: .seconds(4)))
        }
        #expect(done.resumed.contains(sports))
    }

    @Test func eachHubHasItsOwnKnownRate() {
        var e = engine {
            $0.maxInFlight = 100
            var slow = HubPacer.Configuration()
            slow.maxRate = 10
            var fast = HubPacer.Configuration()
            fast.maxRate = 1000
            $0.hubPacing = [fast, slow]
        }
        var done = Performed(e.assigned([p0, sports], now: .zero))
        done.add(e.received((0..<50).map { record(p0, $0, sends: ["w\($0)"]) }, now: .zero))
        done.add(e.received((0..<50).map { record(sports, $0, sends: ["s\($0)"], hub: 1) }, now: .zero))
        #expect(e.paceRate(now: .zero, hub: 0) == 1000)
        #expect(e.paceRate(now: .zero, hub: 1) == 10)
        for ms in stride(from: 10, through: 500, by: 10) { done.add(e.tick(now: .milliseconds(Int64(ms)))) }
        let world = done.sends.filter { $0.send.hasPrefix("w") }.count
        let sportsSent = done.sends.filter { $0.send.hasPrefix("s") }.count
        #expect(world == 50, "the fast hub sends all it has")
        #expect((4...7).contains(sportsSent), "the slow hub stays near 10 a second: \(sportsSent) in half a second")
        #expect(e.wakeAt(now: .milliseconds(500)) != nil, "the slow hub's next token wakes the engine")
    }
}
