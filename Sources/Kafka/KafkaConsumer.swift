import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// A consumer-group member: messages as an `AsyncSequence`, explicit commits, pause/resume.
///
/// `run()` drives librdkafka's poll loop on a thread of its own; it must be running while
/// `messages` is iterated. When the buffer is full the poll loop waits for the application, but
/// never for long (librdkafka would leave the group after `max.poll.interval.ms`): a buffer still
/// full after `pauseAfter` pauses the partitions and the loop polls on.
public final class KafkaConsumer: Service, Sendable {
    private let client: RDKafkaClient
    private let buffer = MessageBuffer()
    private let pauses: Shared<PauseController>
    private let lifecycle = Mutex(ConsumerLifecycle())
    /// Set once the lifecycle says the running poll loop must end; read by the loop on every turn.
    private let stopRequested = Atomic<Bool>(false)
    private let polls = Atomic<UInt64>(0)
    private let fetchWakes = Atomic<UInt64>(0)
    private let logger: Logger
    private let handlers: Shared<RebalanceHandlers>
    public let configuration: KafkaConsumerConfiguration

    public init(
        configuration: KafkaConsumerConfiguration,
        handlers: RebalanceHandlers = RebalanceHandlers(),
        logger: Logger
    ) throws(KafkaError) {
        guard !configuration.topics.isEmpty else { throw .configuration("the consumer has no topics to subscribe to") }
        guard !configuration.groupID.isEmpty else { throw .configuration("the consumer group id is empty") }
        self.configuration = configuration
        self.logger = logger
        let pauses = Shared(
            PauseController(capacity: configuration.bufferCapacity, pauseAfter: configuration.pauseAfter)
        )
        self.pauses = pauses
        let buffer = self.buffer
        let handlers = Shared(handlers)
        self.handlers = handlers
        client = try RDKafkaClient(
            role: .consumer,
            properties: configuration.librdkafkaProperties,
            logger: logger,
            onRebalance: { kind, partitions in
                switch kind {
                case .assign:
                    pauses.withLock { $0.assigned(partitions) }
                    logger.info("Partitions assigned", metadata: ["partitions": "\(partitions)"])
                    handlers.withLock { $0 }.onAssign(partitions)
                    return []
                case .revoke:
                    let revoked = Set(partitions)
                    pauses.withLock { $0.revoked(partitions) }
                    buffer.revoke(revoked)
                    logger.info("Partitions revoked", metadata: ["partitions": "\(partitions)"])
                    return handlers.withLock { $0 }.onRevoke(partitions)
                }
            },
            onRevokeCommitFailed: { offsets, error in handlers.withLock { $0 }.onRevokeCommitFailed(offsets, error) }
        )
    }

    /// Replaces the rebalance handlers; call before `run()`.
    public func setRebalanceHandlers(_ handlers: RebalanceHandlers) {
        self.handlers.withLock { $0 = handlers }
    }

    /// The messages of the assigned partitions, in order within each partition.
    public var messages: Messages { Messages(buffer: buffer) }

    /// Joins the group and polls until shut down gracefully, cancelled or `stop()`ped; then leaves the group.
    public func run() async throws {
        try lifecycle.withLock { (l: inout ConsumerLifecycle) throws(KafkaError) in try l.start() }
        // Membership starts here, not at init: a member that joins must also be polling.
        try client.subscribe(topics: configuration.topics)
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let thread = Thread { [self] in
                        pollLoop()
                        continuation.resume()
                    }
                    thread.name = "hubcast-kafka-consumer"
                    thread.start()
                }
            } onGracefulShutdown: {
                self.stop()
            }
        } onCancel: {
            self.stop()
        }
    }

    /// Stops polling; `run()` returns after the consumer has left its group. Before `run()`, the
    /// consumer never joins (a later `run()` throws).
    public func stop() {
        if lifecycle.withLock({ $0.stop() }) { stopRequested.store(true, ordering: .releasing) }
    }

    private func check(_ call: ConsumerLifecycle.Call) throws(KafkaError) {
        try lifecycle.withLock { (l: inout ConsumerLifecycle) throws(KafkaError) in try l.check(call) }
    }

    /// Commits the next offsets to read; throws if the broker refuses any of them.
    public func commit(_ offsets: [TopicPartitionOffset]) async throws(KafkaError) {
        try check(.commit)
        let client = self.client
        try await Blocking.run { () throws(KafkaError) in try client.commit(offsets) }
    }

    /// The group's committed offsets (next offset to read) for these partitions.
    public func committed(
        _ partitions: [TopicPartition],
        timeout: Duration = .seconds(10)
    ) async throws(KafkaError) -> [TopicPartition: Int64] {
        try check(.committed)
        let client = self.client
        let ms = timeout.timeoutMs
        return try await Blocking.run { () throws(KafkaError) in try client.committed(partitions, timeoutMs: ms) }
    }

    /// Holds delivery from these partitions until `resume`; the member stays in its group. Their
    /// messages already buffered are set aside, so the others' are delivered first.
    public func pause(_ partitions: [TopicPartition]) throws(KafkaError) {
        try check(.pause)
        // Under the pause lock (then the buffer's, the one order both are taken in): a revoke
        // cannot come between the check that a partition is assigned and its messages' hold.
        let buffer = self.buffer
        pauses.withLock { pauses in buffer.hold(pauses.pauseByUser(partitions)) }
    }

    public func resume(_ partitions: [TopicPartition]) throws(KafkaError) {
        try check(.resume)
        pauses.withLock { $0.resumeByUser(partitions) }
        buffer.release(partitions)
    }

    /// The partitions currently assigned to this member.
    public var assignment: Set<TopicPartition> { pauses.withLock { $0.assignment } }

    /// The partitions currently paused, by the application or by backpressure.
    public var pausedPartitions: Set<TopicPartition> { pauses.withLock { $0.paused } }

    /// Messages not yet handed to the application: behind the end of the assigned partitions
    /// (librdkafka's cached watermarks, no broker round trip) plus those buffered here.
    public var lag: Int64 {
        client.lag(Array(pauses.withLock { $0.assignment })) + Int64(buffer.count)
    }

    /// How many times the poll loop has called librdkafka: a liveness probe sees it move.
    public var pollCount: UInt64 { polls.load(ordering: .relaxed) }

    /// Messages librdkafka has fetched for this partition and the poll loop has not taken yet.
    func prefetched(_ partition: TopicPartition) -> Int { client.queuedMessages(partition) }

    /// The topics with messages in the buffer, ready for the application.
    var bufferedTopics: Set<String> { buffer.readyTopics }

    /// How many times the poll loop woke librdkafka's fetchers after its queue was full.
    public var fetchWakeCount: UInt64 { fetchWakes.load(ordering: .relaxed) }

    /// Proves a broker answers before the consumer is relied on.
    public func checkReachable(timeout: Duration) async throws(KafkaError) {
        try check(.checkReachable)
        let client = self.client
        let ms = timeout.timeoutMs
        try await Blocking.run { () throws(KafkaError) in try client.checkReachable(timeoutMs: ms) }
    }

    private func pollLoop() {
        var fullSince: ContinuousClock.Instant?
        var wake = FetchWake(properties: configuration.librdkafkaProperties)
        let started = ContinuousClock.now
        while !stopRequested.load(ordering: .acquiring) {
            // Messages set aside for paused partitions never make the loop wait: no more come for them.
            let buffered = buffer.readyCount
            if buffered >= configuration.bufferCapacity {
                fullSince = fullSince ?? .now
            } else {
                fullSince = nil
            }
            let fullFor = fullSince.map { ContinuousClock.now - $0 } ?? .zero
            if pauses.withLock({ $0.shouldHold(buffered: buffered, fullFor: fullFor) }) {
                // Rebalances wait for the next poll: at most `pauseAfter` longer. The poll thread is
                // librdkafka's (rebalance callbacks run inside rd_kafka_consumer_poll), not the
                // cooperative pool's; it looks again when a queue or the events turn non-empty, and
                // every millisecond while the pipeline catches up (nothing tells it of room).
                // A topic with nothing buffered is not held up: its messages would be handed out
                // next (the topics take turns), so a few of each of its partitions' come in. Once
                // in, the topic has messages buffered: at most those few beyond the capacity. Not
                // a paused partition's: they would only be set aside.
                let waiting = buffer.waiting
                let quiet = client.takeFromPartitions(each: 8, limit: 64) { partition in
                    waiting.topics.contains(partition.topic) || waiting.heldPartitions.contains(partition)
                }
                for result in quiet.results { take(result, &wake) }
                wakeFetchersIfStopped(&wake, since: started)
                client.waitForMessages(timeoutMs: 1)
                continue
            }
            polls.add(1, ordering: .relaxed)
            // Events first (rebalances run inside this call), then each partition's own queue in
            // turn, no more than the buffer has room for: a full buffer makes the loop wait, and
            // what it takes while it waits for room must be whichever partition's turn it is.
            let event = client.poll(timeoutMs: 0)
            let room = min(256, configuration.bufferCapacity - buffered)
            if room > 0 {
                // The queues are looked at before the take too: one turn can take a queue the
                // fetchers stopped at from full to empty, and seen only after it, the queue never
                // looked full (measured: a flooded partition not fetched for 100 ms while the loop
                // waited). Only looked at: the wake itself, a round trip, comes after the take.
                wake.seen(client.fullestPartitionQueue())
                let (results, more) = client.takeFromPartitions(each: 64, limit: room)
                if case .nothing = event, results.isEmpty, !more {
                    client.waitForMessages(timeoutMs: 100)
                }
                take(event, &wake)
                for result in results { take(result, &wake) }
            } else {
                // Full for longer than `pauseAfter`: the partitions are paused (below), and while
                // the buffer stays full the loop only serves events, looking again every millisecond.
                take(event, &wake)
                if case .nothing = event { client.waitForMessages(timeoutMs: 1) }
            }
            wakeFetchersIfStopped(&wake, since: started)
            let changes = pauses.withLock { $0.reconcile(buffered: buffer.readyCount, fullFor: fullFor) }
            if !changes.isEmpty {
                client.pause(changes.pause)
                client.resume(changes.resume)
                wake.pausesChanged()
                logger.debug(
                    "Pause state changed",
                    metadata: ["paused": "\(changes.pause)", "resumed": "\(changes.resume)"]
                )
            }
        }
        client.consumerClose()
        buffer.finish()
        client.destroy()
        lifecycle.withLock { $0.closed() }
    }

    private func take(_ result: RDKafkaClient.PollResult, _ wake: inout FetchWake) {
        switch result {
        case .message(let message):
            wake.polled(messageBytes: message.value.count + (message.key?.count ?? 0))
            // A message fetched just before a revoke may still surface; it is not ours now.
            if pauses.withLock({ $0.assignment.contains(message.topicPartition) }) {
                buffer.append(message)
            }
        case .error(let error):
            logger.warning("Consume error", metadata: ["error": "\(error)"])
        case .nothing, .endOfPartition:
            break
        }
    }

    /// Tells the wake how full the fullest partition queue is, and wakes the fetchers when it says
    /// so: each time it has filled and drained to half, and after a pause or resume, so never while
    /// the pipeline keeps up with the fetches. It waits on this thread for the leaders' answers
    /// (about a millisecond on a local network), 20 ms at most; a wake that fails backs off.
    private func wakeFetchersIfStopped(_ wake: inout FetchWake, since started: ContinuousClock.Instant) {
        let now = ContinuousClock.now - started
        guard wake.queued(client.fullestPartitionQueue(), now: now) else { return }
        let assigned = Array(pauses.withLock { $0.assignment })
        guard !assigned.isEmpty else { return }
        if client.wakeFetchers(assigned, timeoutMs: 20) {
            fetchWakes.add(1, ordering: .relaxed)
        } else {
            wake.failed(now: now)
        }
    }

    /// The consumer's messages; iterate from one task only.
    public struct Messages: AsyncSequence, Sendable {
        public typealias Element = KafkaMessage
        let buffer: MessageBuffer

        public func makeAsyncIterator() -> Iterator { Iterator(buffer: buffer) }

        public struct Iterator: AsyncIteratorProtocol {
            let buffer: MessageBuffer
            public mutating func next() async -> KafkaMessage? { await buffer.next() }
        }

        /// What waiting for a batch ended with.
        public enum Wait: Sendable {
            case batch([KafkaMessage])
            case timedOut
            /// The consumer stopped and every buffered message was taken.
            case finished
        }

        /// What is buffered, up to `max`, without waiting.
        public func takeReady(max: Int) -> [KafkaMessage] { buffer.drain(max: max) }

        /// Waits up to `timeout` for a message, then takes what else is buffered, up to `max`.
        /// A message that arrives as the wait times out is returned, never lost.
        public func nextBatch(max: Int, timeout: Duration) async -> Wait {
            let first: KafkaMessage? = await withTaskGroup(of: KafkaMessage?.self) { group in
                group.addTask { await buffer.next() }
                group.addTask {
                    try? await Task.sleep(for: timeout)
                    return nil
                }
                var message: KafkaMessage?
                for await result in group {
                    if let result { message = result }
                    group.cancelAll()
                }
                return message
            }
            guard let first else { return buffer.isFinished ? .finished : .timedOut }
            return .batch([first] + buffer.drain(max: max - 1))
        }
    }
}
