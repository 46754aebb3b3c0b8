import Broadcast
import Kafka
import Testing

/// The engine driven event by event with a test clock: no tasks, no sleeps, no I/O.
@Suite struct PipelineEngineTests {
    func engine(_ tweak: (inout Engine.Configuration) -> Void = { _ in }) -> Engine {
        var c = Engine.Configuration()
        c.maxInFlight = 8
        c.drainTimeout = .seconds(5)
        c.revokeTimeout = .seconds(3)
        tweak(&c)
        return Engine(configuration: c)
    }

    @Test func outOfOrderCompletionsCommitOnlyTheContiguousPrefix() {
        var e = engine()
        var done = Performed(e.started(now: .zero))
        #expect(done.fetches == 1)
        done.add(e.assigned([p0], now: .zero))
        done.add(e.received((0..<4).map { record(p0, $0, sends: ["s\($0)"]) }, now: .zero))
        #expect(done.sends.map(\.send) == ["s0", "s1", "s2", "s3"])
        for s in ["s1", "s3"] { done.add(e.sendFinished(done.id(of: s)!, .delivered, now: .zero)) }
        #expect(e.committable.isEmpty, "offset 0 is still in flight")
        done.add(e.sendFinished(done.id(of: "s0")!, .delivered, now: .zero))
        #expect(e.committable == [TopicPartitionOffset(p0, offset: 2)], "2 is still in flight, so 3 waits")
        done.add(e.tick(now: .seconds(1)))
        #expect(done.commits.last == [TopicPartitionOffset(p0, offset: 2)])
        e.commitFinished([TopicPartitionOffset(p0, offset: 2)], succeeded: true)
        done.add(e.sendFinished(done.id(of: "s2")!, .delivered, now: .seconds(1)))
        #expect(e.committable == [TopicPartitionOffset(p0, offset: 4)])
    }

    @Test func anItemWithSeveralSendsFinishesWithItsLastSend() {
        var e = engine()
        var done = Performed(e.assigned([p0], now: .zero))
        done.add(e.received([record(p0, 7, sends: ["a", "b", "c"])], now: .zero))
        done.add(e.sendFinished(done.id(of: "a")!, .delivered, now: .zero))
        done.add(e.sendFinished(done.id(of: "c")!, .delivered, now: .zero))
        #expect(e.committable.isEmpty)
        done.add(e.sendFinished(done.id(of: "b")!, .delivered, now: .zero))
        #expect(e.committable == [TopicPartitionOffset(p0, offset: 8)])
    }

    @Test func aRevokeMidFlightCommitsEveryFinishedOffsetOfTheLeavingPartitionsBeforeItCompletes() {
        var e = engine()
        var done = Performed(e.assigned([p0, p1], now: .zero))
        done.add(
            e.received(
                [
                    record(p0, 0, sends: ["a0"]), record(p0, 1, sends: ["a1"]), record(p0, 2, sends: ["a2"]),
                    record(p1, 0, sends: ["b0"]),
                ],
                now: .zero
            )
        )
        done.add(e.sendFinished(done.id(of: "a0")!, .delivered, now: .zero))
        // The revoke waits for a1, still running; a2 is started too (8 slots), so it waits for that as well.
        done.add(e.revoked([p0], id: 1, now: .zero))
        #expect(done.revokes.isEmpty)
        done.add(e.sendFinished(done.id(of: "a1")!, .delivered, now: .seconds(1)))
        #expect(done.revokes.isEmpty)
        done.add(e.sendFinished(done.id(of: "a2")!, .delivered, now: .seconds(1)))
        #expect(done.revokes.count == 1)
        #expect(done.revokes[0].id == 1)
        #expect(done.revokes[0].commit == [TopicPartitionOffset(p0, offset: 3)])
        // The partition that stays is untouched; the one that left takes no more records.
        done.add(e.received([record(p0, 3, sends: ["late"])], now: .seconds(1)))
        #expect(done.id(of: "late") == nil)
        done.add(e.sendFinished(done.id(of: "b0")!, .delivered, now: .seconds(1)))
        #expect(e.committable == [TopicPartitionOffset(p1, offset: 1)])
    }

    @Test func queuedSendsOfALeavingPartitionNeverStartAndTheRevokeIsBoundedByItsTimeout() {
        var e = engine { $0.maxInFlight = 2 }
        var done = Performed(e.assigned([p0], now: .zero))
        done.add(e.received((0..<5).map { record(p0, $0, sends: ["s\($0)"]) }, now: .zero))
        #expect(done.sends.count == 2)
        done.add(e.sendFinished(done.id(of: "s0")!, .delivered, now: .zero))
        #expect(done.sends.count == 3, "s2 takes the freed slot")
        done.add(e.revoked([p0], id: 9, now: .seconds(10)))
        // s1 and s2 hang (a hub that never answers): the revoke completes at its deadline with what finished.
        done.add(e.tick(now: .seconds(12)))
        #expect(done.revokes.isEmpty)
        done.add(e.tick(now: .seconds(13)))
        #expect(done.revokes.map(\.id) == [9])
        #expect(done.revokes[0].commit == [TopicPartitionOffset(p0, offset: 1)])
        #expect(done.sends.count == 3, "s3 and s4 were never started")
        // The late ends of the orphaned sends change nothing, even after the partition comes back.
        done.add(e.assigned([p0], now: .seconds(14)))
        done.add(e.received([record(p0, 1, sends: ["again1"])], now: .seconds(14)))
        done.add(e.sendFinished(done.id(of: "s1")!, .delivered, now: .seconds(14)))
        #expect(e.committable.isEmpty, "offset 1 of the new assignment is still in flight")
        done.add(e.sendFinished(done.id(of: "again1")!, .delivered, now: .seconds(14)))
        #expect(e.committable == [TopicPartitionOffset(p0, offset: 2)])
    }

    @Test func shutdownInATotalHubOutageFinishesAtTheDrainDeadline() {
        var e = engine()
        var done = Performed(e.assigned([p0], now: .zero))
        done.add(e.received((0..<20).map { record(p0, $0, sends: ["s\($0)"]) }, now: .zero))
        done.add(e.sendFinished(done.id(of: "s0")!, .delivered, now: .zero))
        // The hub stops answering; the sends in flight hang in the client's retries.
        done.add(e.shutdownRequested(now: .seconds(1)))
        #expect(done.finished == nil)
        done.add(e.tick(now: seconds(5.9)))
        #expect(done.finished == nil)
        done.add(e.tick(now: .seconds(6)))
        #expect(done.cancelled)
        #expect(done.finished == [TopicPartitionOffset(p0, offset: 1)])
        #expect(e.phase == .finished)
        #expect(done.sends.count == 9, "nothing new starts while draining")
    }

    @Test func aSecondSignalFinishesAtOnceWithTheFinishedWorkCommitted() {
        var e = engine()
        var done = Performed(e.assigned([p0], now: .zero))
        done.add(e.received([record(p0, 0, sends: ["a"]), record(p0, 1, sends: ["b"])], now: .zero))
        done.add(e.sendFinished(done.id(of: "a")!, .delivered, now: .zero))
        done.add(e.shutdownRequested(now: .seconds(1)))
        #expect(done.finished == nil)
        done.add(e.shutdownRequested(now: seconds(1.1)))
        #expect(done.cancelled)
        #expect(done.finished == [TopicPartitionOffset(p0, offset: 1)])
    }

    @Test func aDrainWithNothingInFlightFinishesAtOnce() {
        var e = engine()
        var done = Performed(e.assigned([p0], now: .zero))
        done.add(e.received([record(p0, 0, sends: ["a"])], now: .zero))
        done.add(e.sendFinished(done.id(of: "a")!, .delivered, now: .zero))
        done.add(e.shutdownRequested(now: .seconds(1)))
        #expect(!done.cancelled)
        #expect(done.finished == [TopicPartitionOffset(p0, offset: 1)])
    }

    @Test func aCredentialsStormPausesProbesOneAtATimeAndDeadLettersNothing() {
        var e = engine { $0.probeInterval = .seconds(2) }
        var done = Performed(e.started(now: .zero))
        done.add(e.assigned([p0], now: .zero))
        done.add(e.received((0..<30).map { record(p0, $0, sends: ["s\($0)"]) }, now: .zero))
        let firstWave = done.sends.map(\.id)
        #expect(firstWave.count == 8)
        for id in firstWave {
            done.add(e.sendFinished(id, .hubUnavailable(reason: "unauthorized (HTTP 401)"), now: .seconds(1)))
        }
        #expect(e.hub() == .unavailable(since: .seconds(1), reason: "unauthorized (HTTP 401)"))
        #expect(done.hubUnavailable == 1, "reported once, not once per send")
        #expect(done.deadLetters.isEmpty)
        #expect(done.sends.count == 8, "nothing starts until the probe is due")
        done.add(e.tick(now: .seconds(3)))
        #expect(done.sends.count == 9, "one probe")
        let probe = done.sends.last!
        #expect(probe.send == "s0", "the held sends go first, in order")
        done.add(e.tick(now: .seconds(10)))
        #expect(done.sends.count == 9, "never a second probe while one runs")
        done.add(e.sendFinished(probe.id, .hubUnavailable(reason: "unauthorized (HTTP 401)"), now: .seconds(10)))
        done.add(e.tick(now: .seconds(12)))
        let second = done.sends.last!
        #expect(done.sends.count == 10)
        // The credentials are fixed: the probe succeeds and the pool fills again.
        done.add(e.sendFinished(second.id, .delivered, now: .seconds(12)))
        #expect(e.hub() == .available)
        #expect(done.hubAvailable == 1)
        #expect(e.sendsInFlight == 8)
        #expect(done.deadLetters.isEmpty)
        #expect(e.committable == [TopicPartitionOffset(p0, offset: 1)])
    }

    @Test func aSendFinishedElsewhereDuringAnOutageLeavesTheHubHeldAndItsOffsetCommits() {
        var e = engine { $0.probeInterval = .seconds(2) }
        var done = Performed(e.started(now: .zero))
        done.add(e.assigned([p0], now: .zero))
        done.add(e.received((0..<3).map { record(p0, $0, sends: ["s\($0)"]) }, now: .zero))
        done.add(
            e.sendFinished(done.id(of: "s1")!, .hubUnavailable(reason: "unauthorized (HTTP 401)"), now: .seconds(1))
        )
        // A canary past its deadline ends without a request: no word about the hub.
        done.add(e.sendFinished(done.id(of: "s0")!, .finishedElsewhere, now: .seconds(1)))
        #expect(e.hub() == .unavailable(since: .seconds(1), reason: "unauthorized (HTTP 401)"), "the outage goes on")
        #expect(done.hubAvailable == 0)
        #expect(e.committable == [TopicPartitionOffset(p0, offset: 1)], "its record is done")
    }

    @Test func aThrottlingStormWaitsAndDeadLettersNothing() {
        var e = engine()
        var done = Performed(e.assigned([p0], now: .zero))
        done.add(e.received((0..<8).map { record(p0, $0, sends: ["s\($0)"]) }, now: .zero))
        for (id, _) in done.sends {
            done.add(e.sendFinished(id, .throttled(retryAfter: .seconds(5)), now: .seconds(1)))
        }
        #expect(done.deadLetters.isEmpty)
        #expect(done.sends.count == 8, "each throttled send waits its Retry-After")
        #expect(e.wakeAt(now: .seconds(1)) == .seconds(6), "and the engine is woken when it is over")
        done.add(e.tick(now: seconds(5.9)))
        #expect(done.sends.count == 8)
        done.add(e.tick(now: .seconds(6)))
        #expect(done.sends.count > 8)
        #expect(e.paceRate(now: .seconds(6)) != nil, "throttling turned pacing on")
        for (id, _) in done.sends.dropFirst(8) { done.add(e.sendFinished(id, .delivered, now: .seconds(6))) }
        #expect(done.deadLetters.isEmpty)
    }

    @Test func aThrottledSendWaitsItsOwnRetryAfterWhileTheOthersGoOn() {
        var e = engine { $0.maxInFlight = 2 }
        var done = Performed(e.assigned([p0], now: .zero))
        done.add(e.received((0..<6).map { record(p0, $0, sends: ["s\($0)"]) }, now: .zero))
        #expect(done.sends.map(\.send) == ["s0", "s1"])
        done.add(e.sendFinished(done.id(of: "s0")!, .throttled(retryAfter: .seconds(3)), now: .milliseconds(1)))
        done.add(e.sendFinished(done.id(of: "s1")!, .delivered, now: .milliseconds(1)))
        // Deliver whatever starts, on a clock moving a millisecond at a time, for three seconds.
        var t: Int64 = 1
        var answered = 2
        var retriedAt: Int64?
        while t < 4000 {
            while answered < done.sends.count {
                let (id, send) = done.sends[answered]
                answered += 1
                if send == "s0" { retriedAt = retriedAt ?? t }
                done.add(e.sendFinished(id, .delivered, now: .milliseconds(t)))
            }
            t += 1
            done.add(e.tick(now: .milliseconds(t)))
        }
        let order = done.sends.map(\.send)
        #expect(order.prefix(6) == ["s0", "s1", "s2", "s3", "s4", "s5"], "the others went on: \(order)")
        #expect(order.count == 7, "s0 once more")
        #expect(retriedAt.map { $0 >= 3001 } == true, "not before its Retry-After: \(String(describing: retriedAt))")
        #expect(e.committable == [TopicPartitionOffset(p0, offset: 6)])
    }

    @Test func aFailedDeadLetterWriteNeverCommitsPastTheItem() {
        var e = engine()
        var done = Performed(e.assigned([p0], now: .zero))
        done.add(
            e.received(
                [
                    record(p0, 0, sends: ["a"]),
                    Engine.Record(position: RecordPosition(p0, offset: 1), work: .deadLetter(deadLetter(p0, 1))),
                    record(p0, 2, sends: ["c"]),
                ],
                now: .zero
            )
        )
        #expect(done.deadLetters.count == 1)
        done.add(e.sendFinished(done.id(of: "a")!, .delivered, now: .zero))
        done.add(e.sendFinished(done.id(of: "c")!, .failed(deadLetter(p0, 2)), now: .zero))
        #expect(done.deadLetters.count == 2, "the failed send is dead-lettered, not dropped")
        done.add(e.deadLetterWritten(done.deadLetters[0].id, stored: false, now: .zero))
        done.add(e.deadLetterWritten(done.deadLetters[1].id, stored: true, now: .zero))
        #expect(
            e.committable == [TopicPartitionOffset(p0, offset: 1)],
            "offset 1 could not be stored: nothing past it is committed"
        )
        done.add(e.shutdownRequested(now: .seconds(1)))
        #expect(done.finished == [TopicPartitionOffset(p0, offset: 1)])
    }

    @Test func backpressureStopsFetchingWhenTheQueueIsFull() {
        var e = engine {
            $0.maxQueued = 10
            $0.batchSize = 10
        }
        var done = Performed(e.started(now: .zero))
        done.add(e.assigned([p0], now: .zero))
        #expect(done.fetchSizes == [10])
        done.add(e.received((0..<20).map { record(p0, $0, sends: ["s\($0)"]) }, now: .zero))
        #expect(e.queued == 12)
        #expect(done.fetches == 1, "no fetch while 12 wait for 8 slots")
        for (id, _) in done.sends.prefix(4) { done.add(e.sendFinished(id, .delivered, now: .zero)) }
        #expect(e.queued == 8)
        #expect(done.fetchSizes == [10, 1], "asked once a slot was free, for that one, not once a batch had gone")
        done.add(e.received([], now: .zero))
        #expect(done.fetchSizes == [10, 1, 2], "the fetch came back empty: the room left now is asked for")
    }

    @Test func anIdleSourceStopsTheRunWhenAskedTo() {
        var e = engine { $0.stopWhenIdle = .seconds(2) }
        var done = Performed(e.started(now: .zero))
        done.add(e.fetchTimedOut(now: .seconds(5)))
        #expect(done.finished == nil, "no partitions yet: joining the group takes time")
        done.add(e.assigned([p0], now: .seconds(5)))
        done.add(e.received([record(p0, 0, sends: ["a"])], now: .seconds(5)))
        done.add(e.fetchTimedOut(now: .seconds(8)))
        #expect(done.finished == nil, "a send is in flight")
        done.add(e.sendFinished(done.id(of: "a")!, .delivered, now: .seconds(8)))
        done.add(e.fetchTimedOut(now: .seconds(8)))
        #expect(done.finished == [TopicPartitionOffset(p0, offset: 1)])
    }

    @Test func aRevokeAfterTheRunCompletesAtOnce() {
        var e = engine()
        var done = Performed(e.assigned([p0], now: .zero))
        done.add(e.shutdownRequested(now: .zero))
        #expect(done.finished == [])
        done.add(e.revoked([p0], id: 4, now: .seconds(1)))
        #expect(done.revokes.map(\.id) == [4])
    }

    @Test func pendingRevokesAreCompletedWhenTheRunFinishes() {
        var e = engine()
        var done = Performed(e.assigned([p0, p1], now: .zero))
        done.add(e.received([record(p0, 0, sends: ["a"]), record(p1, 0, sends: ["b"])], now: .zero))
        done.add(e.revoked([p0], id: 2, now: .zero))
        done.add(e.sendFinished(done.id(of: "b")!, .delivered, now: .zero))
        done.add(e.cancelled())
        #expect(done.revokes.map(\.id) == [2])
        #expect(
            done.finished == [TopicPartitionOffset(p1, offset: 1)],
            "the revoke commits its own partitions; the finish the rest"
        )
    }

    @Test func anExhaustedSourceFinishesOnlyOnceEverythingTakenIsDone() {
        var e = engine { $0.maxInFlight = 2 }
        var done = Performed(e.started(now: .zero))
        done.add(e.assigned([p0], now: .zero))
        done.add(e.received((0..<4).map { record(p0, $0, sends: ["s\($0)"]) }, now: .zero))
        done.add(e.sourceFinished(now: .zero))
        let fetches = done.fetches
        #expect(done.finished == nil)
        for round in 0..<2 {
            for (id, _) in done.sends.suffix(2) { done.add(e.sendFinished(id, .delivered, now: .seconds(round))) }
        }
        #expect(done.sends.count == 4, "the queued sends still went out")
        #expect(done.fetches == fetches, "nothing more is asked of a finished source")
        #expect(done.finished == [TopicPartitionOffset(p0, offset: 4)])
    }

    @Test func aHubThatStopsAnsweringIsUnavailableAtItsFirstUnansweredAttempt() {
        var e = engine()
        var done = Performed(e.assigned([p0], now: .zero))
        done.add(e.received((0..<20).map { record(p0, $0, sends: ["s\($0)"]) }, now: .zero))
        done.add(e.sendFinished(done.id(of: "s0")!, .delivered, now: .zero))
        #expect(done.sends.count == 9)
        // One attempt timed out and its send retries: nothing new starts meanwhile.
        done.add(e.attemptGotNoAnswer(reason: "timeout: no answer from the hub", now: .seconds(30)))
        #expect(e.hub() == .unavailable(since: .seconds(30), reason: "timeout: no answer from the hub"))
        #expect(done.hubUnavailable == 1)
        done.add(e.attemptGotNoAnswer(reason: "timeout: no answer from the hub", now: .seconds(31)))
        #expect(done.hubUnavailable == 1, "reported once")
        done.add(e.sendFinished(done.id(of: "s1")!, .delivered, now: .seconds(31)))
        #expect(e.hub() == .available, "an answer proves the hub is back")
        #expect(done.hubAvailable == 1)
        #expect(done.sends.count == 10)
    }

    /// One dropped connection among answered sends is the network's blip: the hub stays available,
    /// nothing pauses, and the send that got no answer goes again at once.
    @Test func aDroppedConnectionAmongAnsweredSendsChangesNothing() {
        var e = engine()
        var done = Performed(e.assigned([p0], now: .zero))
        done.add(e.received((0..<20).map { record(p0, $0, sends: ["s\($0)"]) }, now: .zero))
        done.add(e.sendFinished(done.id(of: "s0")!, .delivered, now: .milliseconds(100)))
        done.add(e.attemptGotNoAnswer(reason: "transport: connection reset", now: .milliseconds(150)))
        #expect(e.hub() == .available)
        let started = done.sends.count
        done.add(
            e.sendFinished(
                done.id(of: "s1")!,
                .hubUnavailable(reason: "transport: connection reset", noAnswer: true),
                now: .milliseconds(200)
            )
        )
        #expect(
            e.hub() == .available && done.hubUnavailable == 0,
            "one unanswered send among answered ones paused the hub"
        )
        #expect(
            done.sends.count == started + 1 && done.sends.last?.send == "s1",
            "the unanswered send goes again, first"
        )
        // A refusal the hub did answer (401 after a fresh token) is its state, whatever others got.
        done.add(
            e.sendFinished(
                done.id(of: "s2")!,
                .hubUnavailable(reason: "unauthorized (HTTP 401)"),
                now: .milliseconds(300)
            )
        )
        #expect(e.hub() == .unavailable(since: .milliseconds(300), reason: "unauthorized (HTTP 401)"))
    }

    /// A hub that never answered is unavailable once its silence has lasted the window, not at the
    /// first unanswered attempt; one that answered and then fell silent, at the first one after.
    @Test func silenceMakesTheHubUnavailableOnlyOnceItLastsTheWindow() {
        var e = engine { $0.noAnswerWindow = .seconds(5) }
        var done = Performed(e.assigned([p0], now: .zero))
        done.add(e.received((0..<20).map { record(p0, $0, sends: ["s\($0)"]) }, now: .zero))
        for second in [0, 1, 3] {
            done.add(e.attemptGotNoAnswer(reason: "transport: connection refused", now: .seconds(second)))
            #expect(e.hub() == .available, "unavailable after \(second) s of silence")
        }
        done.add(
            e.sendFinished(
                done.id(of: "s0")!,
                .hubUnavailable(reason: "transport: connection refused", noAnswer: true),
                now: .seconds(4)
            )
        )
        #expect(e.hub() == .available)
        done.add(e.attemptGotNoAnswer(reason: "transport: connection refused", now: .seconds(5)))
        #expect(
            e.hub() == .unavailable(since: .seconds(5), reason: "transport: connection refused")
                && done.hubUnavailable == 1
        )

        done.add(e.sendFinished(done.id(of: "s1")!, .delivered, now: .seconds(6)))
        #expect(e.hub() == .available && done.hubAvailable == 1)
        done.add(
            e.sendFinished(
                done.id(of: "s2")!,
                .hubUnavailable(reason: "timeout: no answer", noAnswer: true),
                now: .seconds(40)
            )
        )
        #expect(
            e.hub() == .unavailable(since: .seconds(40), reason: "timeout: no answer"),
            "34 s of silence, then a send no attempt of which was answered"
        )
    }
}
