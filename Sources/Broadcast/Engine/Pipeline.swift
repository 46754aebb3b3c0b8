import Kafka
import Logging
import ServiceLifecycle

/// The async shell around `PipelineEngine`: one loop takes events (records fetched, sends ended,
/// rebalances, ticks, shutdown) in order, feeds them to the engine and performs its actions.
/// Sends and dead-letter writes run as child tasks; nothing else waits, so every stop is bounded
/// by the engine's deadlines whatever the hub or the sink does.
public final class Pipeline<Preparer: RecordPreparer, Delivery: Sender, C: Clock>: Service, Sendable
where Preparer.Send == Delivery.Send, C.Duration == Duration {
    public typealias Engine = PipelineEngine<Delivery.Send>

    enum Event: Sendable {
        case fetched(SourceBatch)
        case assigned([TopicPartition])
        case revoked([TopicPartition], Engine.RevokeID)
        case sendFinished(Engine.JobID, Engine.Outcome)
        case deadLetterWritten(Engine.JobID, stored: Bool)
        case attemptFailed(AttemptFailure)
        case commitFinished([TopicPartitionOffset], succeeded: Bool)
        case tick
        /// The pacer's token the engine asked to be woken for (`wakeAt`).
        case wake(Duration)
        /// Time to bring the gauges up to date (once a second, not on every tick or event).
        case gauges
        /// Another instance sending to the hub told what it sends and wants.
        case quotaReport(QuotaReport)
        /// Time to tell the others, and to take this instance's share of what they told.
        case shareQuota
        case shutdown
    }

    public struct Configuration: Sendable {
        public var engine = Engine.Configuration()
        /// How long one fetch waits for records before the engine hears it timed out.
        public var fetchWait: Duration = .milliseconds(250)
        /// How often deadlines, commits, probes and throttling pauses are checked.
        public var tickInterval: Duration = .milliseconds(50)
        /// How often the gauges (in flight, concurrency, lag, the sender's own) are refreshed.
        public var gaugeInterval: Duration = .seconds(1)
        /// How long a revoke may hold the consumer for the engine's answer; nil: the engine's own
        /// revoke timeout and 5 s for the loop to get to it. Past it the partitions go uncommitted.
        public var revokeLimit: Duration?
        /// The hubs' names by hub number, for logs and the observer; empty: one hub, named `hub`.
        public var hubNames: [String] = []
        public init() {}

        func hubName(_ hub: Int) -> String { hubNames.indices.contains(hub) ? hubNames[hub] : "hub" }
    }

    let source: any RecordSource
    let preparer: Preparer
    let sender: Delivery
    let deadLetters: any DeadLetterSink
    let quota: QuotaSharing?
    let configuration: Configuration
    let metrics: PipelineMetrics
    let observer: PipelineObserver
    let logger: Logger
    let clock: C
    let origin: C.Instant
    /// Events in the order they happened, each stamped with when (not when the loop gets to it).
    let events = EventInbox<(Event, Duration)>()
    let revokes: RevokeRendezvous
    /// Puts an event on the loop's stream, stamped with the time it happened.
    let post: @Sendable (Event) -> Void

    public init(
        source: any RecordSource,
        preparer: Preparer,
        sender: Delivery,
        deadLetters: any DeadLetterSink,
        quota: QuotaSharing? = nil,
        configuration: Configuration,
        metrics: PipelineMetrics,
        observer: PipelineObserver = PipelineObserver(),
        logger: Logger,
        clock: C
    ) {
        self.source = source
        self.preparer = preparer
        self.sender = sender
        self.deadLetters = deadLetters
        self.quota = quota
        self.configuration = configuration
        self.metrics = metrics
        self.observer = observer
        self.logger = logger
        self.clock = clock
        origin = clock.now
        let revokes = RevokeRendezvous(
            timeout: configuration.revokeLimit ?? configuration.engine.revokeTimeout + .seconds(5),
            gaveUp: { partitions in
                metrics.revokeTimeouts.increment()
                observer.revokeGaveUp(partitions)
                logger.error(
                    "A revoke was not answered in time: the partitions go with nothing committed since the last commit; the next owner sends that work again",
                    metadata: ["partitions": "\(partitions)"]
                )
            },
            answeredLate: { offsets in
                logger.warning(
                    "A revoke was answered after its partitions had gone: these offsets were not committed",
                    metadata: ["offsets": "\(offsets)"]
                )
            }
        )
        self.revokes = revokes
        let post: @Sendable (Event) -> Void = { [events, origin, clock] in
            events.post(($0, origin.duration(to: clock.now)))
        }
        self.post = post
        source.setRebalanceHandlers(
            RebalanceHandlers(
                onAssign: { partitions in
                    metrics.rebalances(.assigned).increment()
                    post(.assigned(partitions))
                },
                onRevoke: { partitions in
                    metrics.rebalances(.revoked).increment()
                    return revokes.revoke(partitions) { post(.revoked(partitions, $0)) }
                },
                onRevokeCommitFailed: { _, _ in metrics.revokeCommitFailures.increment() }
            )
        )
        sender.onAttemptFailed { post(.attemptFailed($0)) }
        quota?.exchange.onReport { post(.quotaReport($0)) }
        metrics.concurrency.set(configuration.engine.maxInFlight)
    }

    /// Asks for shutdown as a signal does: the first drains, a second finishes at once.
    public func requestShutdown() {
        post(.shutdown)
    }

    // `run` is called through `Service`, so without this every event, action and send of the
    // news pipeline ran as unspecialised generic code (runtime metadata lookups in the profile).
    @_specialize(exported:false,where Preparer == NewsPreparer, Delivery == HubRouter, C == ContinuousClock)
    public func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.tick() }
                var engine = Engine(configuration: configuration.engine)
                var preparer = self.preparer
                // One book per hub: the instances sending to it, as their reports tell (none: pace alone).
                var books =
                    quota.map { q in q.hubs.map { QuotaShare(instance: q.instance, hub: $0, configuration: q.share) } }
                    ?? []
                var finished = await perform(engine.started(now: now()), engine: engine, group: &group)
                // The pacer's next token, when a send waits for one: a timer wakes the engine then,
                // finer than the tick. One timer at a time; a later one is left to run out.
                var wake: Duration?
                var batch: [(Event, Duration)] = []
                while await events.take(into: &batch) {
                    for (event, time) in batch where !finished {
                        if case .wake(let at) = event, at == wake { wake = nil }
                        let actions = handle(event, at: time, engine: &engine, preparer: &preparer, books: &books)
                        finished = await perform(actions, engine: engine, group: &group)
                    }
                    if !finished, let time = batch.last?.1, let at = engine.wakeAt(now: time),
                        at < wake ?? .seconds(Int64.max)
                    {
                        wake = at
                        group.addTask {
                            try? await self.clock.sleep(until: self.origin.advanced(by: at), tolerance: nil)
                            self.post(.wake(at))
                        }
                    }
                }
                // The inbox ends early only when this task is cancelled: finish with what is finished.
                if !finished { _ = await perform(engine.cancelled(), engine: engine, group: &group) }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.post(.shutdown)
        }
    }

    private func now() -> Duration { origin.duration(to: clock.now) }

    private func handle(
        _ event: Event,
        at now: Duration,
        engine: inout Engine,
        preparer: inout Preparer,
        books: inout [QuotaShare]
    ) -> [Engine.Action] {
        switch event {
        case .fetched(.records(let messages)):
            var records: [Engine.Record] = []
            records.reserveCapacity(messages.count)
            for message in messages where engine.accepts(message.topicPartition) {
                records.append(
                    Engine.Record(
                        position: RecordPosition(message.topicPartition, offset: message.offset),
                        work: preparer.prepare(message)
                    )
                )
            }
            return engine.received(records, now: now)
        case .fetched(.timedOut):
            return engine.fetchTimedOut(now: now)
        case .fetched(.finished):
            return engine.sourceFinished(now: now)
        case .assigned(let partitions):
            return engine.assigned(partitions, now: now)
        case .revoked(let partitions, let id):
            return engine.revoked(partitions, id: id, now: now)
        case .sendFinished(let id, let outcome):
            return engine.sendFinished(id, outcome, now: now)
        case .deadLetterWritten(let id, let stored):
            if stored { metrics.deadLettered.increment() }
            return engine.deadLetterWritten(id, stored: stored, now: now)
        case .attemptFailed(.noAnswer(let reason, let hub)):
            return engine.attemptGotNoAnswer(reason: reason, hub: hub, now: now)
        case .commitFinished(let offsets, let succeeded):
            engine.commitFinished(offsets, succeeded: succeeded)
            return []
        case .tick, .wake:
            return engine.tick(now: now)
        case .gauges:
            refreshGauges(engine)
            return []
        case .quotaReport(let report):
            for h in books.indices { books[h].heard(report, now: now) }
            return []
        case .shareQuota:
            guard let quota else { return [] }
            var actions: [Engine.Action] = []
            for h in books.indices where h < engine.hubCount {
                let report = books[h].stamp(report(engine, quota, hub: h, now: now, leaving: false), now: now)
                quota.exchange.publish(report)
                let group = books[h].group(report, now: now)
                metrics.hub(h).quotaPeers.set(books[h].others(now: now))
                actions += engine.shareHub(group, hub: h, now: now)
            }
            return actions
        case .shutdown:
            logger.info("Shutdown requested", metadata: ["sendsInFlight": "\(engine.sendsInFlight)"])
            return engine.shutdownRequested(now: now)
        }
    }

    /// Performs the engine's actions in order; true once the run is over.
    private func perform(_ actions: [Engine.Action], engine: Engine, group: inout DiscardingTaskGroup) async -> Bool {
        for action in actions {
            switch action {
            case .send(let id, let send):
                let post = self.post
                if !sender.start(send, finished: { post(.sendFinished(id, $0)) }) {
                    group.addTask {
                        let outcome = await self.sender.deliver(send)
                        self.post(.sendFinished(id, outcome))
                    }
                }
            case .writeDeadLetter(let id, let record):
                group.addTask {
                    let stored = await self.store(record)
                    self.post(.deadLetterWritten(id, stored: stored))
                }
            case .fetch(let max):
                // Records already fetched come in on this loop: a task per fetch cost more than
                // the few records a full queue has room for.
                let ready = source.takeReady(max: max)
                guard ready.isEmpty else {
                    post(.fetched(.records(ready)))
                    // The inbox does not suspend while it holds events: without this, records that
                    // queue no send (duplicates, dead letters) could keep the loop on its thread
                    // for as long as the consumer keeps bringing them.
                    await Task.yield()
                    continue
                }
                group.addTask {
                    let batch = await self.source.nextBatch(max: max, timeout: self.configuration.fetchWait)
                    self.post(.fetched(batch))
                }
            case .pause(let partitions):
                do { try source.pause(partitions) } catch { logNotPausedOrResumed(error) }
            case .resume(let partitions):
                do { try source.resume(partitions) } catch { logNotPausedOrResumed(error) }
            case .commit(let offsets):
                group.addTask {
                    let succeeded = await self.commit(offsets)
                    self.post(.commitFinished(offsets, succeeded: succeeded))
                }
            case .completeRevoke(let id, let offsets):
                revokes.complete(id, commit: offsets)
            case .reportHubUnavailable(let hub, let reason, let since):
                metrics.hub(hub).hubAvailable.set(0)
                observer.hubUnavailable(configuration.hubName(hub), reason)
                logger.error(
                    "The hub is unavailable: its sends are held and its items wait until a probe succeeds; nothing is dead-lettered for it",
                    metadata: [
                        "hub": "\(configuration.hubName(hub))", "reason": "\(reason)",
                        "forSeconds": "\((now() - since).components.seconds)",
                    ]
                )
            case .reportHubAvailable(let hub, let after, let heldSends, let failedProbes):
                metrics.hub(hub).hubAvailable.set(1)
                observer.hubAvailable(configuration.hubName(hub))
                logger.info(
                    "The hub is available again",
                    metadata: [
                        "hub": "\(configuration.hubName(hub))", "afterSeconds": "\(after.components.seconds)",
                        "heldSends": "\(heldSends)", "failedProbes": "\(failedProbes)",
                    ]
                )
            case .cancelInFlight:
                logger.warning(
                    "Abandoning unfinished sends; they are read again later",
                    metadata: ["sendsInFlight": "\(engine.sendsInFlight)"]
                )
                group.cancelAll()
                sender.abandonStarted()
            case .finish(let offsets):
                // The others take this instance's share now, not when its reports age.
                if let quota {
                    for h in quota.hubs.indices where h < engine.hubCount {
                        quota.exchange.publish(report(engine, quota, hub: h, now: now(), leaving: true))
                    }
                }
                refreshGauges(engine)
                group.cancelAll()
                sender.abandonStarted()
                await finish(committing: offsets)
                return true
            }
        }
        return false
    }

    /// A pause or resume the source refused: only once it has stopped (the run is ending), when
    /// neither matters any more.
    private func logNotPausedOrResumed(_ error: any Error) {
        logger.debug("The source did not pause or resume", metadata: ["error": "\(error)"])
    }

    private func report(
        _ engine: Engine,
        _ quota: QuotaSharing,
        hub: Int,
        now: Duration,
        leaving: Bool
    ) -> QuotaReport {
        let pace = engine.pace(hub: hub)
        return QuotaReport(
            instance: quota.instance,
            hub: quota.hubs[hub],
            accepted: pace.ownAcceptedPerSecond(now: now),
            taken: pace.ownTakenPerSecond(now: now),
            demand: engine.paceDemand(now: now, hub: hub),
            rate: pace.hubRate(now: now),
            leaving: leaving,
            urgent: engine.paceUrgent(hub: hub)
        )
    }

    private func refreshGauges(_ engine: Engine) {
        let now = now()
        for hub in 0..<min(engine.hubCount, metrics.hubs.count) {
            let pace = engine.pace(hub: hub), gauges = metrics.hubs[hub]
            gauges.paceRate.set(pace.rate(now: now) ?? 0)
            gauges.paceHubRate.set(pace.hubRate(now: now) ?? 0)
            gauges.paceShare.set(pace.group.share)
            gauges.paceDemand.set(engine.paceDemand(now: now, hub: hub))
        }
        metrics.inFlight.set(engine.sendsInFlight)
        metrics.concurrency.set(engine.limit)
        metrics.lag.set(source.lag)
        sender.refreshMetrics()
    }

    /// Last words: make dead letters durable, then commit; without a durable sink nothing is committed.
    private func finish(committing offsets: [TopicPartitionOffset]) async {
        var leftover = offsets
        do {
            try await deadLetters.flush()
            if await commit(offsets) { leftover = [] }
        } catch {
            logger.error("Dead-letter sink flush failed; offsets not committed", metadata: ["error": "\(error)"])
            leftover = []
        }
        // A revoke that comes after the run (the consumer leaving its group) commits what is left.
        revokes.close(leftover: leftover)
        events.finish()
    }

    private func commit(_ offsets: [TopicPartitionOffset]) async -> Bool {
        guard !offsets.isEmpty else { return true }
        do {
            try await source.commit(offsets)
            return true
        } catch {
            logger.warning("Commit failed; it is retried with the next commit", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// Stores a dead-letter record, retrying a few times; false leaves the item uncommitted.
    private func store(_ record: DeadLetterRecord) async -> Bool {
        for attempt in 1...5 {
            do {
                try await deadLetters.write(record)
                return true
            } catch {
                logger.error("Dead-letter write failed", metadata: ["attempt": "\(attempt)", "error": "\(error)"])
                do { try await clock.sleep(for: .milliseconds(100 << attempt)) } catch { return false }
            }
        }
        return false
    }

    private func tick() async {
        var sinceGauges: Duration = .zero
        // The first split at the first tick, not an interval in: until its first split the pacer
        // takes itself for alone, and known to be.
        var sinceShare: Duration = quota?.interval ?? .zero
        while !Task.isCancelled {
            do { try await clock.sleep(for: configuration.tickInterval) } catch { return }
            post(.tick)
            sinceGauges += configuration.tickInterval
            if sinceGauges >= configuration.gaugeInterval {
                sinceGauges = .zero
                post(.gauges)
            }
            sinceShare += configuration.tickInterval
            if let quota, sinceShare >= quota.interval {
                sinceShare = .zero
                post(.shareQuota)
            }
        }
    }
}
