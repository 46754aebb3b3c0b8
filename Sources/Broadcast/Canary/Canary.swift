import Foundation
import Kafka
import Logging
import Metrics
import News
import NotificationHubs
import ServiceLifecycle
import Synchronization
import TextFormats

/// The canary: a synthetic breaking item that proves the path from Kafka to the devices works.
///
/// The instance that holds the canary topic's first partition writes a request there every
/// `every` (so a group of any size sends one per interval); whichever instance consumes it sends
/// it through the same pipeline, at `breaking` priority, to `tag`, which only test devices carry.
/// Where the hub gives a notification id, its telemetry is read until it says a device's platform
/// service took it. Each outcome is counted, printed as a stdout line and written back to the
/// topic, where `hubcast canary --once` waits for it. A canary never goes to the dead letters.
public final class Canary: Service, Sendable {
    public struct Configuration: Sendable {
        public var topic: String
        public var tag: String
        /// How often the partition's holder asks for one; nil: only on request (`canary --once`).
        public var every: Duration?
        /// Names this instance in requests and results.
        public var instance: String
        /// The consumer group: requests name it, and requests naming another are left alone.
        public var group: String

        public init(
            topic: String = Canary.defaultTopic,
            tag: String = Canary.defaultTag,
            every: Duration? = nil,
            instance: String,
            group: String = "hubcast"
        ) {
            self.topic = topic
            self.tag = tag
            self.every = every
            self.instance = instance
            self.group = group
        }
    }

    /// What the canary needs from Kafka and the hub; closures, so tests run it in memory.
    public struct Seams: Sendable {
        /// Writes a record to the canary topic's first partition.
        public var publish: @Sendable (CanaryRecord) async throws -> Void
        /// True while this instance holds the canary topic's first partition.
        public var owns: @Sendable () -> Bool
        /// The hub's telemetry of a notification.
        public var details: @Sendable (String) async throws(SendFailure) -> NotificationDetails
        /// Milliseconds since the epoch.
        public var nowMs: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
        public var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
        /// Where a result's line goes (stdout).
        public var write: @Sendable ([UInt8]) -> Void = { FileHandle.standardOutput.write(Data($0 + [0x0A])) }

        public init(
            publish: @escaping @Sendable (CanaryRecord) async throws -> Void,
            owns: @escaping @Sendable () -> Bool,
            details: @escaping @Sendable (String) async throws(SendFailure) -> NotificationDetails
        ) {
            self.publish = publish
            self.owns = owns
            self.details = details
        }
    }

    public static let defaultTopic = "hubcast.canary"
    public static let defaultTag = "hubcast-canary"
    /// How often deadlines are checked.
    static let tickInterval: Duration = .milliseconds(200)

    public let configuration: Configuration
    private let seams: Seams
    private let book: Mutex<CanaryBook>
    private let metrics = CanaryMetrics()
    private let logger: Logger
    private let sequence = Atomic<Int>(0)
    private let lastJunkWarningMs = Atomic<Int64>(0)
    private let verifications: AsyncStream<(id: String, notificationID: String, atMs: Int64)>
    private let verificationWriter: AsyncStream<(id: String, notificationID: String, atMs: Int64)>.Continuation
    private let outbox: AsyncStream<CanaryResult>
    private let outboxWriter: AsyncStream<CanaryResult>.Continuation

    public init(configuration: Configuration, seams: Seams, logger: Logger) {
        self.configuration = configuration
        self.seams = seams
        self.logger = logger
        book = Mutex(CanaryBook(instance: configuration.instance, group: configuration.group))
        (verifications, verificationWriter) = AsyncStream.makeStream()
        (outbox, outboxWriter) = AsyncStream.makeStream()
    }

    // MARK: The pipeline's side

    /// What the pipeline does with a record of the canary topic: a request becomes one breaking
    /// send to the canary tag, fresh until its deadline; a result, or anything else, nothing.
    func work(for message: KafkaMessage) -> PipelineEngine<NewsSend>.Work {
        guard let record = CanaryRecord(bytes: message.value) else {
            // Once a minute at most: whoever writes junk to the topic does not get to fill the log.
            let now = seams.nowMs()
            if now - lastJunkWarningMs.load(ordering: .relaxed) >= 60_000 {
                lastJunkWarningMs.store(now, ordering: .relaxed)
                logger.warning(
                    "Not a canary record on the canary topic: skipped (said once a minute)",
                    metadata: [
                        "topic": "\(message.topic)", "partition": "\(message.partition)", "offset": "\(message.offset)",
                    ]
                )
            }
            return .done
        }
        guard case .request(let request) = record else { return .done }
        let now = seams.nowMs()
        let (taken, actions) = book.withLock { $0.taken(request, nowMs: now) }
        perform(actions)
        guard taken == .send else { return .done }
        let planned = PlannedSend(
            tagExpression: configuration.tag,
            properties: [
                ("messageParam", "hubcast canary"), ("headline", "hubcast canary"), ("category", "canary"),
                ("id", request.id), ("canary", "true"),
            ]
        )
        let deadlineMs = CanaryBook.deadlineMs(of: request, nowMs: now)
        return .sends(
            [
                NewsSend(
                    planned: planned,
                    itemID: request.id,
                    category: "canary",
                    source: message,
                    priority: .breaking,
                    staleAt: Double(deadlineMs) / 1000,
                    isCanary: true
                )
            ],
            priority: .breaking,
            freshFor: .milliseconds(deadlineMs - now)
        )
    }

    /// The hub accepted a canary send.
    func accepted(_ send: NewsSend, notificationID: String?) {
        let now = seams.nowMs()
        perform(book.withLock { $0.accepted(id: send.itemID, notificationID: notificationID, nowMs: now) })
    }

    /// A canary send failed; `final`: it will not go again.
    func failed(_ send: NewsSend, reason: FailureReason, final: Bool) {
        let now = seams.nowMs()
        perform(book.withLock { $0.failed(id: send.itemID, reason: reason.name, final: final, nowMs: now) })
    }

    /// A send failed for the hub's fault (credentials, TLS, no answer): the reason canaries give
    /// if the pipeline goes on to hold the hub as unavailable.
    func noteHubFailure(_ reason: FailureReason) {
        book.withLock { $0.hubFailed(reason: reason.name) }
    }

    /// The pipeline holds the hub as unavailable: canaries that cannot go meanwhile fail for its reason.
    public func hubUnavailable() {
        book.withLock { $0.hubUnavailable() }
    }

    /// The pipeline found the hub available again.
    public func hubAvailable() {
        book.withLock { $0.hubAvailable() }
    }

    /// A graceful shutdown began: no more requests; this instance's own not yet taken are left to
    /// the partition's next holder.
    public func stopAsking() {
        book.withLock { $0.stop() }
    }

    // MARK: The service: requests, deadlines, telemetry, results

    /// Placed before the pipeline in the service group, so it stops after it: the canaries the
    /// pipeline finishes while it drains are still reported and written.
    public func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.publishResults() }
                group.addTask {
                    await self.verify()
                    // The last verification has reported: the outbox may close.
                    self.outboxWriter.finish()
                }
                group.addTask { await self.tick() }
                if let every = self.configuration.every {
                    group.addTask { await self.request(every: every) }
                }
            }
        } onGracefulShutdown: {
            self.stopAsking()
            self.verificationWriter.finish()
        }
    }

    /// One request per interval while this instance holds the partition.
    private func request(every: Duration) async {
        while !Task.isShuttingDownGracefully {
            do { try await cancelWhenGracefulShutdown { try await self.seams.sleep(every) } } catch { return }
            guard seams.owns(), !book.withLock({ $0.stopping }) else { continue }
            let now = seams.nowMs()
            let request = CanaryRequest(
                id: "canary-\(configuration.instance)-\(sequence.add(1, ordering: .relaxed).newValue)",
                requestedAtMs: now,
                deadlineMs: now + every.inMilliseconds,
                by: configuration.instance,
                group: configuration.group
            )
            book.withLock { $0.requested(request) }
            do {
                try await seams.publish(.request(request))
            } catch {
                logger.warning(
                    "The canary request could not be written to Kafka",
                    metadata: ["topic": "\(configuration.topic)", "error": "\(error)"]
                )
                perform(book.withLock { $0.failed(id: request.id, reason: "kafka", final: true, nowMs: seams.nowMs()) })
            }
        }
    }

    private func tick() async {
        while !Task.isShuttingDownGracefully {
            do { try await cancelWhenGracefulShutdown { try await self.seams.sleep(Self.tickInterval) } } catch {
                return
            }
            let now = seams.nowMs()
            let owning = seams.owns()
            perform(book.withLock { $0.tick(nowMs: now, owning: owning) })
        }
    }

    private func verify() async {
        await withDiscardingTaskGroup { group in
            for await v in verifications {
                group.addTask {
                    let wait = v.atMs - self.seams.nowMs()
                    if wait > 0 { try? await self.seams.sleep(.milliseconds(wait)) }
                    let actions: [CanaryBook.Action]
                    do throws(SendFailure) {
                        let details = try await self.seams.details(v.notificationID)
                        let now = self.seams.nowMs()
                        actions = self.book.withLock { $0.details(id: v.id, details, nowMs: now) }
                    } catch {
                        let now = self.seams.nowMs()
                        actions = self.book.withLock {
                            $0.detailsUnavailable(id: v.id, status: error.status, message: error.message, nowMs: now)
                        }
                    }
                    self.perform(actions)
                }
            }
        }
    }

    private func publishResults() async {
        for await result in outbox {
            do {
                try await seams.publish(.result(result))
            } catch {
                logger.warning(
                    "A canary result could not be written to Kafka",
                    metadata: ["id": "\(result.id)", "error": "\(error)"]
                )
            }
        }
    }

    private func perform(_ actions: [CanaryBook.Action]) {
        for action in actions {
            switch action {
            case .verify(let id, let notificationID, let atMs):
                if case .terminated = verificationWriter.yield((id, notificationID, atMs)) {
                    perform(book.withLock { $0.stopVerifying(id: id, nowMs: seams.nowMs()) })
                }
            case .finish(let result):
                metrics.record(result)
                seams.write(Self.line(result, nowMs: seams.nowMs()))
                if result.succeeded {
                    logger.debug("Canary", metadata: ["id": "\(result.id)", "outcome": "\(result.outcome.rawValue)"])
                } else {
                    logger.error(
                        "Canary failed: the path from Kafka to the devices is broken",
                        metadata: [
                            "id": "\(result.id)", "reason": "\(result.reason ?? "-")",
                        ]
                    )
                }
                outboxWriter.yield(result)
            }
        }
    }

    /// `{"ts": …, "canary": {…}}` (schemas/canary.schema.json).
    public static func line(_ result: CanaryResult, nowMs: Int64) -> [UInt8] {
        struct Line: Encodable {
            let ts: String
            let canary: CanaryResult
        }
        return CanaryRecord.encode(Line(ts: CivilDate.rfc3339(epochSeconds: Double(nowMs) / 1000), canary: result))
    }
}

/// The canary's metrics: made once, but for a failure reason's counter, made when first seen.
struct CanaryMetrics: Sendable {
    /// Requested to accepted by the hub.
    let endToEnd = Timer(label: "hubcast_canary_e2e")

    func record(_ result: CanaryResult) {
        if let ms = result.endToEndMs { endToEnd.recordMilliseconds(ms) }
        if result.succeeded {
            // Made at the first success, not at start: a fresh instance has no time to report,
            // rather than 1970 (which would look like a canary missing for decades).
            Meter(label: "hubcast_canary_last_success_timestamp_seconds").set(Double(result.atMs) / 1000)
        } else {
            // Reasons are a small fixed set: failure reasons, no-target, no-device, abandoned, cancelled,
            // unexpected-state, stale, undelivered, not-consumed, hub-unavailable, kafka.
            Counter(label: "hubcast_canary_failures_total", dimensions: [("reason", result.reason ?? "unknown")])
                .increment()
        }
    }
}

extension Canary.Seams {
    /// The seams of a running instance: `producer` writes to the topic's first partition, the
    /// consumer's assignment says whether this instance holds it, the client reads telemetry (a
    /// client of its own, one attempt a read: its failures must not tell the pipeline anything
    /// about the hub, and the next read is half a second away anyway).
    public static func live(
        topic: String,
        producer: KafkaProducer,
        consumer: KafkaConsumer,
        client: NotificationHubClient
    ) -> Self {
        let partition = TopicPartition(topic: topic, partition: 0)
        return Self(
            publish: { record in _ = try await producer.send(topic: topic, partition: 0, key: nil, value: record.bytes)
            },
            owns: { consumer.assignment.contains(partition) },
            details: { id throws(SendFailure) in try await client.notificationDetails(id: id) }
        )
    }
}
