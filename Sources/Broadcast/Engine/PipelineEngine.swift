import DequeModule
import Kafka
import News

/// The pipeline's decisions, as a value: which sends start, which offsets are committed, when
/// partitions may leave, when a hub is held and probed, and when the run is over.
///
/// Sends go to one hub or several (`Work.sends(…, hub:)`, a small integer). Each hub has its own
/// line: its state (held and probed while unavailable), its pacer, its lanes, its throttled sends
/// and its in-flight limit, so one hub throttled or down holds only the sends routed to it.
/// Offsets, partitions and revokes are the engine's, whatever hub a record's sends go to.
///
/// Every method takes one event (with the time it happened, measured from any fixed origin) and
/// returns the actions the shell must perform. No I/O, no clock and no locks inside: the same
/// engine drives `run`, `demo` and `replay`, and tests drive it event by event.
///
/// Invariants: an offset is committed only when every record at or below it is finished
/// (delivered, dead-lettered or dropped); the finished offsets of revoked partitions are
/// committed in the revoke, before they go; every wait ends at a deadline.
public struct PipelineEngine<Send: Sendable>: Sendable {
    private struct Job: LaneJob {
        enum Kind: Sendable {
            case send(Send)
            case deadLetter(DeadLetterRecord)
        }
        let id: JobID
        let position: RecordPosition
        let kind: Kind
        var priority: Priority = .normal
        /// Its partition's place in the lanes.
        var slot = 0
        /// The hub it goes to (its line); 0 for dead-letter writes.
        var hub = 0
        /// When the send may no longer go: starting it then spends no token (the sender dead-letters it).
        var staleAt: Duration?
        var age: Int { id }
    }

    private struct Running: Sendable {
        let job: Job
        /// The hub is unavailable and this send is the one probing it.
        var isProbe = false
        /// Its partition left (or the run finished): its end changes nothing.
        var orphaned = false
        /// The pacer's epoch when it started: a throttle of it lowers the rate only once per epoch.
        var epoch = 0
        var isSend: Bool { if case .send = job.kind { true } else { false } }
    }

    private struct PendingRevoke: Sendable {
        let partitions: Set<TopicPartition>
        let deadline: Duration
    }

    /// One hub's share of the engine: what it holds, paces and probes.
    private struct HubLine: Sendable {
        var state: HubState = .available
        var pacer: HubPacer
        /// Sends waiting for a slot and a token: by priority, partitions in turn; those that must
        /// go again (hub unavailable, throttled) first in their partition.
        var lanes: SendLanes<Job>
        /// Throttled sends, each until its own `Retry-After` is over (then back in its lane), in that order.
        var throttledQueue: Deque<(notBefore: Duration, job: Job)> = []
        /// Its sends running, orphaned ones too: a request holds its slot until it ends.
        var inFlight = 0
        /// When its first send started: until a second later, its unpaced rate is not known.
        var firstSendAt: Duration?
        var nextProbeAt: Duration = .zero
        var lastReportAt: Duration = .zero
        /// When the hub last answered anything (a send accepted, refused or throttled), or, before
        /// it ever did, when the first attempt went unanswered: the start of its silence.
        var lastAnswerAt: Duration?
        var failedProbes = 0

        init(pacing: HubPacer.Configuration, reserveEvery: Int) {
            pacer = HubPacer(configuration: pacing)
            lanes = SendLanes(reserveEvery: reserveEvery)
        }

        var waiting: Int { lanes.count + throttledQueue.count }

        /// Holds a throttled send until `notBefore`: the queue stays in that order (the Retry-Afters
        /// of one hub are mostly the same, so this is an append).
        mutating func holdThrottled(_ job: Job, until notBefore: Duration) {
            var index = throttledQueue.endIndex
            while index > throttledQueue.startIndex, throttledQueue[index - 1].notBefore > notBefore { index -= 1 }
            throttledQueue.insert((notBefore, job), at: index)
        }

        /// Throttled sends whose `Retry-After` is over go back to their lanes, first in their partitions.
        mutating func releaseThrottled(now: Duration) {
            while let first = throttledQueue.first, first.notBefore <= now {
                lanes.putBack(throttledQueue.removeFirst().job)
            }
        }

        /// Sends not started: they stay unfinished, read again by the next owner or after a restart.
        mutating func dropWaiting() {
            lanes.removeAll()
            throttledQueue.removeAll()
        }
    }

    public let configuration: Configuration
    public private(set) var phase: Phase = .running

    private var tracker = OffsetTracker()
    private var owned: Set<TopicPartition> = []
    /// Each partition ever seen, as a small integer for the lanes.
    private var slots: [TopicPartition: Int] = [:]
    private var slotPartitions: [TopicPartition] = []
    /// Each topic ever seen, as a small integer for the lanes.
    private var groups: [String: Int] = [:]
    /// Slots the engine asked the source to pause: their lanes hold more than enough.
    private var pausedSlots: Set<Int> = []
    /// Jobs per unfinished record; the record is finished when its count reaches zero.
    private var remaining: [RecordPosition: Int] = [:]
    /// Records whose dead-letter write failed: never finished, so never committed past, in this process.
    private var stuck: Set<RecordPosition> = []
    /// Each hub's line, indexed by the hub's number.
    private var hubs: [HubLine]
    private var deadLetterQueue: Deque<Job> = []
    private var running: [JobID: Running] = [:]
    private var revokes: [RevokeID: PendingRevoke] = [:]
    private var nextJobID: JobID = 0
    private var fetching = false
    /// The source said nothing more will come: finish once everything taken is done.
    private var exhausted = false
    private var committing = false
    private var nextCommitAt: Duration = .zero
    private var lastActivityAt: Duration?
    /// Dead-letter writes running: they hold slots of their own, not a hub's.
    private var deadLettersRunning = 0

    public init(configuration: Configuration) {
        self.configuration = configuration
        hubs = (0..<max(1, configuration.hubPacing.count)).map {
            HubLine(pacing: configuration.pacing(ofHub: $0), reserveEvery: configuration.reserveEvery)
        }
    }

    // MARK: What the shell reads (metrics, readiness)

    /// Sends started and not yet ended (dead-letter writes not included).
    public var sendsInFlight: Int { running.values.count { $0.isSend && !$0.orphaned } }
    /// Jobs waiting for a slot.
    public var queued: Int { hubs.reduce(deadLetterQueue.count) { $0 + $1.waiting } }
    /// Sends waiting to start, of one priority (not those waiting for their `Retry-After`).
    public func queued(_ priority: Priority) -> Int { hubs.reduce(0) { $0 + $1.lanes.count(of: priority) } }
    /// Partitions paused at the source because their sends waiting are enough for now.
    public var pausedPartitions: [TopicPartition] { pausedSlots.sorted().map { slotPartitions[$0] } }
    /// Sends allowed in flight, per hub.
    public var limit: Int { configuration.maxInFlight }
    /// How many hubs the engine sends to (their numbers are 0..<hubCount).
    public var hubCount: Int { hubs.count }
    /// A hub's state.
    public func hub(_ hub: Int = 0) -> HubState { hubs[hub].state }
    /// Sends per second allowed now to a hub (nil: not paced, the hub has not throttled).
    public func paceRate(now: Duration, hub: Int = 0) -> Double? { hubs[hub].pacer.rate(now: now) }
    /// A hub's pacer, for what it measured and decided (reports to other instances, gauges).
    public func pace(hub: Int = 0) -> HubPacer { hubs[hub].pacer }

    /// Sends per second this instance could use at a hub (`HubPacer.demand`).
    public func paceDemand(now: Duration, hub: Int = 0) -> Double {
        hubs[hub].pacer.demand(waiting: hubs[hub].waiting, now: now)
    }

    /// Of `paceDemand`, the breaking sends waiting: the other instances make room for them first.
    public func paceUrgent(hub: Int = 0) -> Double { Double(hubs[hub].lanes.count(of: .breaking)) }

    /// Other instances send to the same hub: from now on this one sends its share.
    public mutating func shareHub(_ group: HubPacer.Group, hub: Int = 0, now: Duration) -> [Action] {
        hubs[hub].pacer.share(group, now: now)
        return settle(now: now)
    }

    /// When the shell must wake the engine (with `tick`) although no event came: a send waits for
    /// a pacer's next token, or a throttled one for its `Retry-After`. nil: no wait, or one that
    /// an event or the regular tick ends.
    public func wakeAt(now: Duration) -> Duration? {
        guard phase == .running else { return nil }
        var earliest: Duration?
        for line in hubs where line.inFlight < limit {
            var at = line.throttledQueue.first?.notBefore
            if !line.lanes.isEmpty, let token = line.pacer.nextTokenAt(now: now) { at = min(token, at ?? token) }
            if let at { earliest = min(at, earliest ?? at) }
        }
        return earliest
    }
    public func isOwned(_ partition: TopicPartition) -> Bool { owned.contains(partition) }

    /// True when a record of this partition would be taken now (so it is worth preparing).
    public func accepts(_ partition: TopicPartition) -> Bool {
        phase == .running && isOwned(partition)
    }

    /// Offsets that would be committed now.
    public var committable: [TopicPartitionOffset] { tracker.committable() }

    // MARK: Events

    /// The run begins: ask for records.
    public mutating func started(now: Duration) -> [Action] {
        nextCommitAt = now + configuration.commitInterval
        return settle(now: now)
    }

    public mutating func assigned(_ partitions: [TopicPartition], now: Duration) -> [Action] {
        for p in partitions {
            // A partition that comes back starts afresh from the group's committed offset.
            tracker.forget(p)
            owned.insert(p)
        }
        lastActivityAt = now
        return settle(now: now)
    }

    /// The source takes these partitions away once `completeRevoke(id, …)` is performed.
    public mutating func revoked(_ partitions: [TopicPartition], id: RevokeID, now: Duration) -> [Action] {
        let leaving = Set(partitions)
        owned.subtract(leaving)
        // Sends not started stay unfinished: the next owner reads them from the committed offset.
        for partition in leaving {
            guard let slot = slots[partition] else { continue }
            for h in hubs.indices { hubs[h].lanes.removeAll(slot: slot) }
            // The source forgets a leaving partition's pause.
            pausedSlots.remove(slot)
        }
        for h in hubs.indices { hubs[h].throttledQueue.removeAll { leaving.contains($0.job.position.partition) } }
        if phase == .finished {
            return [completeRevoke(id, leaving)]
        }
        revokes[id] = PendingRevoke(partitions: leaving, deadline: now + configuration.revokeTimeout)
        return settle(now: now)
    }

    public mutating func received(_ records: [Record], now: Duration) -> [Action] {
        fetching = false
        lastActivityAt = now
        var filled: [Int] = []
        for record in records {
            let position = record.position
            // Not ours (any more), or the run is stopping: leave it unstarted and uncommitted.
            guard phase == .running, owned.contains(position.partition) else { continue }
            tracker.started(position.partition, offset: position.offset)
            switch record.work {
            case .done:
                tracker.finished(position.partition, offset: position.offset)
            case .deadLetter(let deadLetter):
                remaining[position] = 1
                deadLetterQueue.append(makeJob(position, .deadLetter(deadLetter)))
            case .sends(let sends, _, _, _) where sends.isEmpty:
                tracker.finished(position.partition, offset: position.offset)
            case .sends(let sends, let priority, let freshFor, let hub):
                remaining[position] = sends.count
                let slot = slot(of: position.partition)
                let staleAt = freshFor.map { now + $0 }
                let h = line(hub)
                for send in sends {
                    var job = makeJob(position, .send(send))
                    job.priority = priority
                    job.slot = slot
                    job.staleAt = staleAt
                    job.hub = h
                    hubs[h].lanes.append(job)
                }
                if filled.last != slot { filled.append(slot) }
            }
        }
        return pauseFilled(filled, now: now) + settle(now: now)
    }

    /// A fetch found nothing within its wait.
    public mutating func fetchTimedOut(now: Duration) -> [Action] {
        fetching = false
        if let idle = configuration.stopWhenIdle, phase == .running, !owned.isEmpty, running.isEmpty, queued == 0,
            now - (lastActivityAt ?? now) >= idle
        {
            return shutdownRequested(now: now)
        }
        return settle(now: now)
    }

    /// The source will give nothing more (a file read to its end, a consumer stopped): what was
    /// taken still goes out, then the run finishes.
    public mutating func sourceFinished(now: Duration) -> [Action] {
        fetching = false
        exhausted = true
        return settle(now: now)
    }

    public mutating func sendFinished(_ id: JobID, _ outcome: Outcome, now: Duration) -> [Action] {
        guard let run = running.removeValue(forKey: id) else { return settle(now: now) }
        let h = run.job.hub
        if run.isSend { hubs[h].inFlight -= 1 }
        var actions: [Action] = []
        switch outcome {
        case .delivered:
            hubs[h].lastAnswerAt = now
            hubs[h].pacer.accepted(epoch: run.epoch, now: now)
            if case .unavailable(let since, _) = hubs[h].state {
                hubs[h].state = .available
                actions.append(
                    .reportHubAvailable(
                        hub: h,
                        after: now - since,
                        heldSends: hubs[h].lanes.count,
                        failedProbes: hubs[h].failedProbes
                    )
                )
                hubs[h].failedProbes = 0
            }
            jobEnded(run)
        case .failed(let deadLetter):
            if deadLetter.status != nil { hubs[h].lastAnswerAt = now }
            guard !run.orphaned else { break }
            // The send's slot passes to its dead-letter write; the record stays unfinished until stored.
            deadLetterQueue.append(Job(id: run.job.id, position: run.job.position, kind: .deadLetter(deadLetter)))
        case .hubUnavailable(let reason, let noAnswer):
            if run.isProbe { hubs[h].failedProbes += 1 }
            switch hubs[h].state {
            case .available where noAnswer && !silentLongEnough(h, now: now):
                // Others are answered: this send goes again, first in line, and nothing pauses.
                break
            case .available:
                hubs[h].state = .unavailable(since: now, reason: reason)
                hubs[h].lastReportAt = now
                actions.append(.reportHubUnavailable(hub: h, reason: reason, since: now))
            case .unavailable:
                break
            }
            hubs[h].nextProbeAt = now + configuration.probeInterval
            hold(run)
        case .throttled(let retryAfter):
            hubs[h].lastAnswerAt = now
            // This send waits its own Retry-After, never less; the others are the pacer's to pace.
            let wait = retryAfter ?? hubs[h].pacer.configuration.defaultPause
            hubs[h].pacer.throttled(epoch: run.epoch, retryAfter: wait, now: now)
            holdThrottled(run, until: now + wait)
        case .abandoned:
            break
        case .finishedElsewhere:
            jobEnded(run)
        }
        return actions.isEmpty ? settle(now: now) : actions + settle(now: now)
    }

    /// A dead-letter write ended; `stored` false means the sink refused it after its retries.
    public mutating func deadLetterWritten(_ id: JobID, stored: Bool, now: Duration) -> [Action] {
        if let run = running.removeValue(forKey: id) {
            deadLettersRunning -= 1
            if !stored && !run.orphaned { stuck.insert(run.job.position) }
            jobEnded(run)
        }
        return settle(now: now)
    }

    /// An attempt got no answer while its send still retries (each retry may take a whole request
    /// timeout): once the hub has answered nothing for `noAnswerWindow`, treat it as unavailable
    /// now, rather than minutes later when every retry of every send in flight has run out. One
    /// dropped connection among answered sends changes nothing. The sends in flight go on; the
    /// first one delivered, or a probe, makes it available again.
    public mutating func attemptGotNoAnswer(reason: String, hub h: Int = 0, now: Duration) -> [Action] {
        guard hubs.indices.contains(h), hubs[h].state == .available, silentLongEnough(h, now: now) else { return [] }
        hubs[h].state = .unavailable(since: now, reason: reason)
        hubs[h].lastReportAt = now
        hubs[h].nextProbeAt = now + configuration.probeInterval
        return [.reportHubUnavailable(hub: h, reason: reason, since: now)]
    }

    /// Whether a hub has answered nothing for the no-answer window (its silence starts at the
    /// first unanswered attempt if it never answered).
    private mutating func silentLongEnough(_ h: Int, now: Duration) -> Bool {
        let silentSince = hubs[h].lastAnswerAt ?? now
        if hubs[h].lastAnswerAt == nil { hubs[h].lastAnswerAt = now }
        return now - silentSince >= configuration.noAnswerWindow
    }

    public mutating func commitFinished(_ offsets: [TopicPartitionOffset], succeeded: Bool) {
        committing = false
        if succeeded { tracker.committed(offsets) }
    }

    /// Time passed: deadlines, commits, probes and throttling pauses are checked.
    public mutating func tick(now: Duration) -> [Action] {
        if case .draining(let deadline) = phase, now >= deadline {
            return finish()
        }
        var actions: [Action] = []
        if now >= nextCommitAt, !committing, phase == .running {
            nextCommitAt = now + configuration.commitInterval
            let offsets = tracker.committable()
            if !offsets.isEmpty {
                committing = true
                actions.append(.commit(offsets))
            }
        }
        for h in hubs.indices {
            guard case .unavailable(let since, let reason) = hubs[h].state,
                now - hubs[h].lastReportAt >= configuration.hubReportInterval
            else { continue }
            hubs[h].lastReportAt = now
            actions.append(.reportHubUnavailable(hub: h, reason: reason, since: since))
        }
        for (id, revoke) in revokes.sorted(by: { $0.key < $1.key }) where now >= revoke.deadline {
            revokes[id] = nil
            actions.append(completeRevoke(id, revoke.partitions))
        }
        return actions + settle(now: now)
    }

    /// SIGTERM or SIGINT: the first drains, a second finishes at once.
    public mutating func shutdownRequested(now: Duration) -> [Action] {
        switch phase {
        case .running:
            phase = .draining(deadline: now + configuration.drainTimeout)
            // Not started: stays uncommitted and is read again after the restart.
            for h in hubs.indices { hubs[h].dropWaiting() }
            return settle(now: now)
        case .draining:
            return finish()
        case .finished:
            return []
        }
    }

    /// The task was cancelled: finish at once with what is finished.
    public mutating func cancelled() -> [Action] {
        phase == .finished ? [] : finish()
    }

    // MARK: Internals

    private mutating func makeJob(_ position: RecordPosition, _ kind: Job.Kind) -> Job {
        nextJobID += 1
        return Job(id: nextJobID, position: position, kind: kind)
    }

    /// A send that must go again, first in its partition's line, unless its partition left or
    /// the run is stopping.
    private mutating func hold(_ run: Running) {
        guard mayGoAgain(run) else { return }
        hubs[run.job.hub].lanes.putBack(run.job)
    }

    /// A throttled send, held by its hub until `notBefore`.
    private mutating func holdThrottled(_ run: Running, until notBefore: Duration) {
        guard mayGoAgain(run) else { return }
        hubs[run.job.hub].holdThrottled(run.job, until: notBefore)
    }

    private func mayGoAgain(_ run: Running) -> Bool {
        !run.orphaned && phase == .running && owned.contains(run.job.position.partition)
    }

    private mutating func jobEnded(_ run: Running) {
        // One look-up by index: a position hashes its topic's name, and this runs for every send.
        guard !run.orphaned, let index = remaining.index(forKey: run.job.position) else { return }
        let position = run.job.position
        if remaining.values[index] > 1 {
            remaining.values[index] -= 1
            return
        }
        remaining.remove(at: index)
        if !stuck.isEmpty, stuck.contains(position) { return }
        tracker.finished(position.partition, offset: position.offset)
    }

    private mutating func completeRevoke(_ id: RevokeID, _ partitions: Set<TopicPartition>) -> Action {
        let offsets = tracker.committable(in: partitions)
        for p in partitions where !owned.contains(p) { forget(p) }
        return .completeRevoke(id, commit: offsets)
    }

    /// The partition's jobs no longer count: their ends change nothing.
    private mutating func forget(_ partition: TopicPartition) {
        tracker.forget(partition)
        deadLetterQueue.removeAll { $0.position.partition == partition }
        for (id, run) in running where run.job.position.partition == partition { running[id]?.orphaned = true }
        remaining = remaining.filter { $0.key.partition != partition }
        stuck = stuck.filter { $0.partition != partition }
    }

    private mutating func finish() -> [Action] {
        phase = .finished
        for h in hubs.indices { hubs[h].dropWaiting() }
        deadLetterQueue.removeAll()
        var actions: [Action] = []
        for (id, revoke) in revokes.sorted(by: { $0.key < $1.key }) {
            actions.append(completeRevoke(id, revoke.partitions))
        }
        revokes.removeAll()
        if !running.isEmpty {
            for id in running.keys { running[id]?.orphaned = true }
            actions.append(.cancelInFlight)
        }
        actions.append(.finish(commit: tracker.committable()))
        return actions
    }

    /// Starts what may start, completes revokes and drains that are done, asks for more records.
    private mutating func settle(now: Duration) -> [Action] {
        guard phase != .finished else { return [] }
        var actions: [Action] = []
        startJobs(now: now, into: &actions)
        for (id, revoke) in revokes.sorted(by: { $0.key < $1.key }) where !isBusy(revoke.partitions) {
            revokes[id] = nil
            actions.append(completeRevoke(id, revoke.partitions))
        }
        if case .draining = phase, running.isEmpty, deadLetterQueue.isEmpty {
            return actions + finish()
        }
        if exhausted, phase == .running, running.isEmpty, queued == 0 {
            return actions + finish()
        }
        if !pausedSlots.isEmpty { resumeDrained(now: now, into: &actions) }
        // Sends of paused partitions do not stop the fetching: what the others have (a breaking
        // item behind a backlog) must still come in. The hard cap bounds memory whatever happens.
        // A fetch asks only for the room left (in sends; a record may plan several): a full queue
        // takes a few records each time a few sends finish, not a batch once a batch has finished,
        // so an item of a quiet category (handed out first by the source) comes in at once rather
        // than after a batch of sends.
        let room = min(configuration.maxQueued - (queued - waitingInPaused), configuration.maxQueued * 4 - queued)
        if phase == .running, !fetching, !exhausted, room > 0 {
            fetching = true
            actions.append(.fetch(max: min(configuration.batchSize, room)))
        }
        return actions
    }

    // MARK: Fetch-stage fairness

    /// The partition's slot in the lanes, its topic's group (categories take turns, then their partitions).
    private mutating func slot(of partition: TopicPartition) -> Int {
        if let slot = slots[partition] { return slot }
        let slot = slotPartitions.count
        slots[partition] = slot
        slotPartitions.append(partition)
        let group = groups[partition.topic] ?? groups.count
        groups[partition.topic] = group
        for h in hubs.indices { hubs[h].lanes.register(slot: slot, group: group) }
        return slot
    }

    /// The line of hub `hub`, added (with every slot known so far) the first time it is named.
    private mutating func line(_ hub: Int) -> Int {
        let h = max(0, hub)
        while hubs.count <= h {
            var line = HubLine(
                pacing: configuration.pacing(ofHub: hubs.count),
                reserveEvery: configuration.reserveEvery
            )
            for (slot, partition) in slotPartitions.enumerated() {
                line.lanes.register(slot: slot, group: groups[partition.topic] ?? 0)
            }
            hubs.append(line)
        }
        return h
    }

    private var waitingInPaused: Int {
        pausedSlots.reduce(0) { sum, slot in hubs.reduce(sum) { $0 + $1.lanes.waiting[slot] } }
    }

    /// Sends one partition may have waiting for a hub before it is paused at the source, so that
    /// its backlog stays in Kafka, not ahead of the other partitions' records in the fetch buffers:
    /// about `laneSeconds` of its sends at the hub's current pace. nil: no pausing, the pace is too
    /// high for a lane of at most `maxQueued` to last through a resume (librdkafka refetches a
    /// resumed partition a second later), or not known yet. A hub held as unavailable sends
    /// nothing: its partitions pause at `minLaneDepth`, and the other hubs' go on.
    func laneLimit(hub h: Int = 0, now: Duration) -> Int? {
        let line = hubs[h]
        let rate: Double
        if case .unavailable = line.state {
            rate = 0
        } else if let paced = line.pacer.rate(now: now) {
            rate = paced
        } else {
            guard let first = line.firstSendAt, now - first >= .seconds(1) else { return nil }
            rate = line.pacer.ownTakenPerSecond(now: now)
        }
        let busy = line.lanes.waiting.reduce(0) { $0 + ($1 > 0 ? 1 : 0) }
        let perPartition = rate / Double(max(1, busy))
        let limit = max(
            configuration.minLaneDepth,
            Int(min(perPartition * configuration.laneSeconds, Double(Int32.max)))
        )
        return limit <= configuration.maxQueued ? limit : nil
    }

    /// Pauses the partitions that just received enough to last at some hub.
    private mutating func pauseFilled(_ filled: [Int], now: Duration) -> [Action] {
        guard phase == .running, !filled.isEmpty else { return [] }
        var pause: [TopicPartition] = []
        for h in hubs.indices {
            guard let limit = laneLimit(hub: h, now: now) else { continue }
            for slot in filled where hubs[h].lanes.waiting[slot] >= limit && !pausedSlots.contains(slot) {
                pausedSlots.insert(slot)
                pause.append(slotPartitions[slot])
            }
        }
        return pause.isEmpty ? [] : [.pause(pause)]
    }

    /// Resumes paused partitions whose lanes are down to half at every hub (a second or more of
    /// sends left, while the refetch comes), or all of them once no pace calls for pausing.
    private mutating func resumeDrained(now: Duration, into actions: inout [Action]) {
        let limits = hubs.indices.map { phase == .running ? laneLimit(hub: $0, now: now) : nil }
        var resume: [TopicPartition] = []
        for slot in pausedSlots.sorted()
        where hubs.indices.allSatisfy({ h in limits[h].map { hubs[h].lanes.waiting[slot] <= $0 / 2 } ?? true }) {
            pausedSlots.remove(slot)
            resume.append(slotPartitions[slot])
        }
        if !resume.isEmpty { actions.append(.resume(resume)) }
    }

    private mutating func startJobs(now: Duration, into actions: inout [Action]) {
        // Dead-letter writes do not touch a hub: they go whatever its state, in slots of their own.
        while deadLettersRunning < limit, let job = deadLetterQueue.popFirst() {
            running[job.id] = Running(job: job)
            deadLettersRunning += 1
            guard case .deadLetter(let record) = job.kind else { continue }
            actions.append(.writeDeadLetter(job.id, record))
        }
        guard phase == .running else { return }
        for h in hubs.indices { startSends(hub: h, now: now, into: &actions) }
    }

    /// Starts what may start at one hub: within its in-flight limit, its pacer's tokens and, while
    /// it is unavailable, one probe at a time.
    private mutating func startSends(hub h: Int, now: Duration, into actions: inout [Action]) {
        hubs[h].releaseThrottled(now: now)
        var probe = false
        if case .unavailable = hubs[h].state {
            // One send at a time probes an unavailable hub.
            guard now >= hubs[h].nextProbeAt, !running.values.contains(where: { $0.isProbe && $0.job.hub == h })
            else { return }
            probe = true
        }
        while hubs[h].inFlight < limit, let priority = hubs[h].lanes.nextPriority(),
            let next = hubs[h].lanes.first(priority)
        {
            // A stale send never reaches the hub (the sender dead-letters it): no token, no probe.
            let stale = next.staleAt.map { now >= $0 } ?? false
            var epoch = 0
            if !stale {
                guard let taken = hubs[h].pacer.take(now: now) else { return }
                epoch = taken
                if hubs[h].firstSendAt == nil { hubs[h].firstSendAt = now }
            }
            guard let job = hubs[h].lanes.popFirst(priority) else { return }
            running[job.id] = Running(job: job, isProbe: probe && !stale, epoch: epoch)
            hubs[h].inFlight += 1
            if case .send(let send) = job.kind { actions.append(.send(job.id, send)) }
            if probe && !stale { return }
        }
    }

    /// True while a revoked partition still has work running or dead letters to write.
    private func isBusy(_ partitions: Set<TopicPartition>) -> Bool {
        running.values.contains { !$0.orphaned && partitions.contains($0.job.position.partition) }
            || deadLetterQueue.contains { partitions.contains($0.position.partition) }
    }
}
