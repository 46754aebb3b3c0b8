import Foundation
import Kafka
import Logging
import News
import NotificationHubs
import ServiceLifecycle

/// consume → validate → batch → fan out → commit. One news item travels top to bottom:
/// `run` takes a batch, `prepare` (Pipeline+Item) decodes and plans it, `deliver` sends each
/// planned send through the bounded pool, and `commit` stores offsets below which all is done.
public final class Pipeline: Service, Sendable {
    let consumer: KafkaConsumer
    let client: NotificationHubClient
    let deadLetters: any DeadLetterSink
    let configuration: PipelineConfiguration
    let metrics: PipelineMetrics
    let logger: Logger
    let state: PipelineState
    let gate: ConcurrencyGate
    let decoder: NewsItemDecoder
    let clock: @Sendable () -> Double
    let outageLog = OutageLog()

    public init(consumer: KafkaConsumer, client: NotificationHubClient, deadLetters: any DeadLetterSink,
                configuration: PipelineConfiguration, metrics: PipelineMetrics, logger: Logger,
                clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.consumer = consumer
        self.client = client
        self.deadLetters = deadLetters
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
        state = PipelineState(dedupeWindow: configuration.dedupeWindow)
        gate = ConcurrencyGate(limiter: AIMDLimiter(minimum: configuration.minConcurrency, maximum: configuration.concurrency), clock: clock)
        decoder = NewsItemDecoder(maxMessageBytes: configuration.maxMessageBytes)
        metrics.concurrency.set(configuration.concurrency)
    }

    /// The consumer's rebalance handlers: partitions are tracked from assignment, and finished
    /// (drained and committed) before they leave.
    public static func rebalanceHandlers(for pipeline: @escaping @Sendable () -> Pipeline?) -> KafkaConsumer.RebalanceHandlers {
        KafkaConsumer.RebalanceHandlers(
            onAssign: { pipeline()?.state.assign($0) },
            onRevoke: { pipeline()?.handOver($0) })
    }

    public func run() async throws {
        await withDiscardingTaskGroup { group in
            var lastCommit = ContinuousClock.now
            var lastMessage = ContinuousClock.now
            reading: while !Task.isCancelled && !Task.isShuttingDownGracefully {
                let wait = min(configuration.commitInterval, configuration.stopWhenIdle ?? configuration.commitInterval)
                switch await consumer.messages.nextBatch(max: configuration.batchSize, timeout: wait) {
                case .finished:
                    break reading
                case .timedOut:
                    // Idle only counts once partitions are ours: joining the group can take seconds.
                    if let idle = configuration.stopWhenIdle, let assignedAt = state.assignedAt,
                       ContinuousClock.now - max(lastMessage, assignedAt) >= idle, state.inFlight == 0 {
                        logger.info("Idle: stopping", metadata: ["idleSeconds": "\(idle.components.seconds)"])
                        break reading
                    }
                case .batch(var batch):
                    lastMessage = .now
                    if (batch.count < configuration.batchSize) && (configuration.batchLinger > .zero) {
                        try? await Task.sleep(for: configuration.batchLinger)
                        batch += consumer.messages.drain(max: configuration.batchSize - batch.count)
                    }
                    for message in batch {
                        // On shutdown, messages not yet started stay uncommitted and are read again later.
                        if Task.isShuttingDownGracefully || Task.isCancelled { break reading }
                        await dispatch(message, in: &group)
                    }
                }
                if ContinuousClock.now - lastCommit >= configuration.commitInterval {
                    await commit()
                    lastCommit = .now
                }
            }
            // Shutdown: nothing new starts; what is in flight gets `drainTimeout` to finish.
            if await !waitForIdle(timeout: configuration.drainTimeout) {
                logger.warning("Drain timed out: abandoning in-flight sends, which will be read again", metadata: ["inFlight": "\(state.inFlight)"])
                group.cancelAll()
            }
        }
        do {
            try await deadLetters.flush()
            await commit()
        } catch {
            // Without a durable dead-letter sink the offsets stay uncommitted: the items come back.
            logger.error("Dead-letter sink flush failed; offsets not committed", metadata: ["error": "\(error)"])
        }
        metrics.inFlight.set(state.inFlight)
    }

    /// Starts one message's work: finished at once, or sends added to the group.
    private func dispatch(_ message: KafkaMessage, in group: inout DiscardingTaskGroup) async {
        guard state.start(message) else { return }
        metrics.consumed.increment()
        let key = PipelineState.ItemKey(partition: message.topicPartition, offset: message.offset)
        switch prepare(message) {
        case .done:
            state.finish(key)
        case .deadLetter(let record):
            state.expect(key, sends: 1)
            // A flood of bad input takes pool slots too, so its writes stay bounded.
            await gate.acquire()
            group.addTask {
                await self.deadLetter(record, key: key)
                self.gate.release(succeeded: nil)
            }
        case .send(let item, let category, let sends):
            state.expect(key, sends: sends.count)
            for send in sends {
                await gate.acquire()
                metrics.inFlight.set(state.inFlight)
                group.addTask { await self.deliver(send, item: item, category: category, message: message, key: key) }
            }
        }
    }

    /// True once the group has assigned partitions to this member.
    public var hasPartitions: Bool { state.assignedAt != nil }

    /// A throttled or overloaded answer was seen: lower the adaptive limit.
    public func throttled() {
        gate.throttled()
        metrics.concurrency.set(gate.limit)
    }

    /// Commits every partition's finished prefix.
    func commit(only partitions: Set<TopicPartition>? = nil) async {
        let offsets = state.committable(only: partitions)
        metrics.lag.set(consumer.lag + Int64(consumer.buffered))
        metrics.sasTokensMinted.set(client.tokens.mintCount)
        guard !offsets.isEmpty else { return }
        do {
            try await consumer.commit(offsets)
            state.committed(offsets)
        } catch {
            logger.warning("Commit failed; it is retried with the next commit", metadata: ["error": "\(error)"])
        }
    }

    /// Waits until nothing is in flight; false on timeout.
    func waitForIdle(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while state.inFlight > 0 {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// On the poll thread, before partitions move: stop starting their work, let what runs finish
    /// (bounded), commit, forget. Whatever did not finish is redone by the next owner.
    func handOver(_ partitions: [TopicPartition]) {
        let leaving = Set(partitions)
        state.revoke(partitions)
        let deadline = ContinuousClock.now + configuration.drainTimeout
        while state.inFlight(in: leaving) > 0 && ContinuousClock.now < deadline { usleep(10_000) }
        let offsets = state.committable(only: leaving)
        do {
            try consumer.commitBlocking(offsets)
        } catch {
            logger.warning("Commit on revoke failed; the next owner re-reads from the last commit", metadata: ["error": "\(error)"])
        }
        state.forget(partitions)
    }
}
