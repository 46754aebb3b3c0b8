import Broadcast
import Kafka
import Logging
import Synchronization
import Testing

/// The real pipeline shell and engine, through in-memory seams and a manual clock. Each test runs
/// 20 times: it waits for events, never for time, so it must pass every time.
@Suite struct PipelineShellTests {
    struct Harness {
        let source = ScriptedSource()
        let sender: ScriptedSender
        let deadLetters = MemoryDeadLetters()
        let clock = ManualClock()
        let pipeline: Pipeline<OneSendPerRecord, ScriptedSender, ManualClock>

        init(
            sender: ScriptedSender = ScriptedSender(),
            drain: Duration = .seconds(5),
            maxInFlight: Int = 8,
            // The consumer's backstop for a revoke, in real time (the engine's own timeout runs on the
            // manual clock): far beyond any stall of a loaded machine, so only the test of the limit,
            // which passes its own, can see it fire. The default, 8 s, was seen to fire when the
            // whole suite started at once on a fresh clone.
            revokeLimit: Duration? = .seconds(120),
            observer: PipelineObserver = PipelineObserver()
        ) {
            self.sender = sender
            var configuration = Pipeline<OneSendPerRecord, ScriptedSender, ManualClock>.Configuration()
            configuration.engine.maxInFlight = maxInFlight
            configuration.engine.drainTimeout = drain
            configuration.engine.revokeTimeout = .seconds(3)
            configuration.revokeLimit = revokeLimit
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            pipeline = Pipeline(
                source: source,
                preparer: OneSendPerRecord(),
                sender: sender,
                deadLetters: deadLetters,
                configuration: configuration,
                metrics: PipelineMetrics(categories: []),
                observer: observer,
                logger: logger,
                clock: clock
            )
        }

        func start() -> Task<Void, any Error> {
            let pipeline = self.pipeline
            return Task { try await pipeline.run() }
        }
    }

    @Test(arguments: 0..<20) func aRevokeMidFlightCommitsTheFinishedWorkBeforeThePartitionsGo(run: Int) async throws {
        let h = Harness()
        let running = h.start()
        h.source.assign([p0, p1])
        h.source.push((0..<3).map { message(p0, $0) } + [message(p1, 0)])
        await h.sender.waitForStarted(4)
        h.sender.answer("0/0", .delivered)
        h.sender.answer("0/2", .delivered)
        // "0/1" is still in flight: the revoke waits for it.
        async let revoked = h.source.revoke([p0])
        h.sender.answer("0/1", .delivered)
        #expect(await revoked == [TopicPartitionOffset(p0, offset: 3)])
        h.pipeline.requestShutdown()
        h.pipeline.requestShutdown()
        try await running.value
        #expect(h.source.committed[p0] == 3)
        #expect(h.source.committed[p1] == nil, "p1's only send never finished")
    }

    /// Records already in the source when the engine asks are taken on its loop (`takeReady`),
    /// no more at once than its queue has room for: 2,500 of them through a queue of 1,000, every
    /// one sent once, in order within the partition's commits, and all committed.
    @Test(arguments: 0..<20) func recordsAlreadyThereAreTakenWithoutWaitingAndNoneIsLost(run: Int) async throws {
        let h = Harness(sender: ScriptedSender(auto: { _ in .delivered }))
        let running = h.start()
        h.source.assign([p0])
        h.source.push((0..<2500).map { message(p0, $0) })
        await h.sender.waitForStarted(2500)
        h.pipeline.requestShutdown()
        try await running.value
        #expect(h.source.committed[p0] == 2500)
        #expect(h.sender.started.count == 2500)
        #expect(Set(h.sender.started).count == 2500, "a record was sent twice")
    }

    /// The engine holds a revoke for its in-flight sends (3 s on the manual clock, which the test
    /// never moves); the consumer's limit (10 ms of real time) passes first: the partition goes
    /// with nothing committed for it, and the pipeline says so instead of going on silently.
    @Test(arguments: 0..<20) func aRevokeNotAnsweredWithinTheConsumersLimitIsReported(run: Int) async throws {
        let gaveUp = Mutex<[[TopicPartition]]>([])
        let h = Harness(
            revokeLimit: .milliseconds(10),
            observer: PipelineObserver(revokeGaveUp: { p in gaveUp.withLock { $0.append(p) } })
        )
        let running = h.start()
        h.source.assign([p0, p1])
        h.source.push([message(p0, 0), message(p1, 0)])
        await h.sender.waitForStarted(2)
        h.sender.answer("1/0", .delivered)
        #expect(await h.source.revoke([p0]) == [], "the revoke was given up: nothing to commit for p0")
        #expect(gaveUp.withLock { $0 } == [[p0]])
        // The send of the partition that went ends later; the pipeline goes on with the other one.
        h.sender.answer("0/0", .delivered)
        h.pipeline.requestShutdown()
        try await running.value
        #expect(h.source.committed[p1] == 1)
        #expect(h.source.committed[p0] == nil, "p0 left before its send ended: its next owner sends it again")
    }

    @Test(arguments: 0..<20) func sigtermInATotalHubOutageExitsAtTheDrainDeadline(run: Int) async throws {
        // The hub answers nothing: every send hangs in the client until it is cancelled.
        let h = Harness(sender: ScriptedSender { $0 == "0/0" ? .delivered : nil })
        let running = h.start()
        h.source.assign([p0])
        h.source.push((0..<50).map { message(p0, $0) })
        await h.sender.waitForStarted(9)
        h.pipeline.requestShutdown()
        await h.clock.waitForSleepers()
        h.clock.advance(by: .seconds(4))
        #expect(h.sender.waiting.count == 8, "sends still hang before the deadline")
        await h.clock.waitForSleepers()
        h.clock.advance(by: .seconds(2))
        try await running.value
        #expect(h.sender.waiting.isEmpty, "abandoned sends were cancelled")
        #expect(h.source.committed[p0] == 1)
        #expect(h.deadLetters.records.isEmpty)
    }

    @Test(arguments: 0..<20) func aSecondShutdownRequestFinishesAtOnce(run: Int) async throws {
        let h = Harness(sender: ScriptedSender { $0 == "0/0" ? .delivered : nil }, drain: .seconds(3600))
        let running = h.start()
        h.source.assign([p0])
        h.source.push((0..<5).map { message(p0, $0) })
        await h.sender.waitForStarted(5)
        h.pipeline.requestShutdown()
        h.pipeline.requestShutdown()
        try await running.value
        #expect(h.source.committed[p0] == 1)
    }

    @Test(arguments: 0..<20) func aCredentialsStormDeadLettersNothingAndResumesWhenAProbeSucceeds(run: Int) async throws
    {
        let h = Harness()
        let running = h.start()
        h.source.assign([p0])
        h.source.push((0..<20).map { message(p0, $0) })
        await h.sender.waitForStarted(8)
        for send in h.sender.started { h.sender.answer(send, .hubUnavailable(reason: "unauthorized (HTTP 401)")) }
        // Nothing starts until the probe is due (2 s after the last failure), then exactly one send.
        #expect(h.sender.started.count == 8)
        while h.sender.started.count < 9 {
            await h.clock.waitForSleepers()
            h.clock.advance(by: .milliseconds(500))
        }
        // The probe is one of the held sends; it succeeds, and the pool fills again at once.
        let probe = try #require(h.sender.started.last)
        #expect(h.sender.started.dropLast().contains(probe), "a held send probes, not a new one")
        h.sender.answer(probe, .delivered)
        await h.sender.waitForStarted(17)
        #expect(h.deadLetters.records.isEmpty)
        h.pipeline.requestShutdown()
        h.pipeline.requestShutdown()
        try await running.value
    }

    @Test(arguments: 0..<20) func aThrottledSendWaitsItsOwnRetryAfterWhileTheOthersGoOn(run: Int) async throws {
        // "0/0" waits for the test's answer the first time; every other send is accepted at once.
        let firstTry = Mutex(true)
        let sender = ScriptedSender { send in
            send == "0/0"
                && firstTry.withLock { first in
                    defer { first = false }
                    return first
                } ? nil : .delivered
        }
        // One send in flight at a time, so the throttle is heard before anything else could start.
        let h = Harness(sender: sender, maxInFlight: 1)
        let running = h.start()
        h.source.assign([p0])
        h.source.push((0..<2).map { message(p0, $0) })
        await h.sender.waitForStarted(1)
        h.sender.answer("0/0", .throttled(retryAfter: .seconds(2)))
        // Nothing pauses the hub: the next send starts on the clock as it stands.
        await h.sender.waitForStarted(2)
        #expect(h.sender.started == ["0/0", "0/1"])
        // The engine sets a timer for the throttled send's Retry-After (the tick is the other sleeper).
        await h.clock.waitForSleepers(2)
        h.clock.advance(by: .milliseconds(1900))
        await h.clock.waitForSleepers(2)
        #expect(h.sender.started == ["0/0", "0/1"], "never again before its Retry-After")
        h.clock.advance(by: .milliseconds(150))
        await h.sender.waitForStarted(3)
        #expect(h.sender.started == ["0/0", "0/1", "0/0"])
        h.pipeline.requestShutdown()
        try await running.value
        #expect(h.source.committed[p0] == 2, "both delivered and committed")
        #expect(h.deadLetters.records.isEmpty, "throttling never dead-letters")
    }

    @Test(arguments: 0..<20) func aRefusedDeadLetterNeverCommitsPastTheItem(run: Int) async throws {
        let h = Harness(sender: ScriptedSender { $0 == "0/1" ? .failed(deadLetter(p0, 1)) : .delivered })
        h.deadLetters.refuseAll()
        let running = h.start()
        h.source.assign([p0])
        h.source.push((0..<3).map { message(p0, $0) })
        await h.sender.waitForStarted(3)
        // The sink's retries back off on the clock: let them run out.
        for _ in 0..<5 {
            await h.clock.waitForSleepers(2)
            h.clock.advance(by: .seconds(5))
        }
        h.pipeline.requestShutdown()
        try await running.value
        #expect(h.source.committed[p0] == 1, "offset 1 was never stored, so nothing past it is committed")
    }
}
