import Foundation
import Kafka
import Logging
import News
import NotificationHubs
import Synchronization
import TextFormats

/// Delivers news sends to one hub through the Notification Hubs client (which builds the request,
/// adds the cached SAS token and retries) and decides whose fault a failure is. Every send is
/// counted here. Several hubs: one sender each, behind a `HubRouter`.
public final class HubSender: Sender {
    public let client: NotificationHubClient
    public let delivered: DeliveredSends
    /// Where accepted sends are recorded across processes; nil: remembered in this one only.
    let ledger: (any DeliveryLedger)?
    let metrics: PipelineMetrics
    /// This hub's own counters and gauges.
    let hubMetrics: HubMetrics
    /// Its number among the pipeline's hubs, which its attempt failures carry to the engine.
    let hub: Int
    /// Its name in logs and dead letters when the pipeline sends to several hubs; else nil.
    let hubName: String?
    /// The hub's resource URI, its name in the ledger (made once: a concatenation per send otherwise).
    let resourceURI: String
    let logger: Logger
    let clock: @Sendable () -> Double
    /// Time-to-hub targets in milliseconds, indexed by priority's raw value.
    let targets: [Int64?]
    /// Where a scheduled send's line goes (stdout): the id that cancels it.
    let announce: @Sendable ([UInt8]) -> Void
    private let attemptListener = AttemptListener()
    /// Hears canary sends' outcomes, once attached; read only for a canary send.
    private let canary = Mutex<Canary?>(nil)
    /// The last 5xx of each send going again for one (by delivery key): a send whose bound passes
    /// before its next attempt is dead-lettered as `server-error` with it, not as a bare `stale`.
    /// Only sends the hub answered 5xx are here, each until it ends.
    private let serverErrors = Mutex<[Int: SendFailure]>([:])
    /// How many are there: a send that ends looks in the map only when some are (no lock per send).
    private let serverErrorCount = Atomic<Int>(0)
    private static let serverErrorsKept = 10_000
    /// Accepted sends that ended while their ledger record was still being stored, and how many
    /// may: past it, an accepted send keeps its slot until its record is stored.
    private let recordsBehind = Atomic<Int>(0)
    let recordsBehindLimit: Int
    /// Accepted sends that ended with their record still being stored, now.
    var recordsBehindNow: Int { recordsBehind.load(ordering: .relaxed) }

    /// Creates the client too: throttled sends come back at once (the engine holds each for its
    /// own `Retry-After`, and its pacer decides about the rest), and unanswered attempts reach the
    /// engine while the send still retries.
    public init(
        configuration: NotificationHubConfiguration,
        transport: any HTTPTransport,
        delivered: DeliveredSends,
        ledger: (any DeliveryLedger)? = nil,
        metrics: PipelineMetrics,
        logger: Logger,
        hub: Int = 0,
        hubName: String? = nil,
        targets: [Priority: Duration] = [:],
        recordsBehindLimit: Int = 0,
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        announce: @escaping @Sendable ([UInt8]) -> Void = { FileHandle.standardOutput.write(Data($0 + [0x0A])) }
    ) {
        self.targets = Priority.allCases.map { targets[$0]?.inMilliseconds }
        self.recordsBehindLimit = max(0, recordsBehindLimit)
        self.announce = announce
        let listener = attemptListener
        client = Self.client(
            configuration: configuration,
            transport: transport,
            logger: logger,
            attemptFailed: { reason, status in
                if let failure = AttemptFailure(reason, status: status, hub: hub) { listener.fire(failure) }
            }
        )
        self.delivered = delivered
        self.ledger = ledger
        self.metrics = metrics
        self.hub = hub
        self.hubName = hubName
        resourceURI = configuration.resourceURI
        hubMetrics = metrics.hub(hub)
        self.logger = logger
        self.clock = clock
    }

    /// The client for sends the engine paces (`run`, `replay`): a throttled send ends at once, and
    /// the engine holds it for its own `Retry-After` while its pacer decides about the rest. The
    /// one place the pipeline sets the client's retry policy; every other rule is the client's.
    public static func client(
        configuration: NotificationHubConfiguration,
        transport: any HTTPTransport,
        logger: Logger,
        attemptFailed: @escaping @Sendable (FailureReason, _ status: Int?) -> Void = { _, _ in }
    ) -> NotificationHubClient {
        var configuration = configuration
        configuration.retry.retriesThrottling = false
        return NotificationHubClient(
            configuration: configuration,
            transport: transport,
            logger: logger,
            attemptFailed: attemptFailed
        )
    }

    /// Takes the send's last 5xx out of the map, if it has one there.
    private func forgetServerError(of send: NewsSend) -> SendFailure? {
        guard serverErrorCount.load(ordering: .relaxed) > 0 else { return nil }
        return serverErrors.withLock { errors in
            let removed = errors.removeValue(forKey: send.deliveryKey)
            serverErrorCount.store(errors.count, ordering: .relaxed)
            return removed
        }
    }

    public func onAttemptFailed(_ listener: @escaping @Sendable (AttemptFailure) -> Void) {
        attemptListener.set(listener)
    }

    public func attach(_ canary: Canary) {
        self.canary.withLock { $0 = canary }
    }

    public func refreshMetrics() {
        hubMetrics.sasTokensMinted.set(client.tokens.mintCount)
        if let ledger { metrics.ledgerUnrecorded.set(ledger.unrecorded) }
    }

    public func deliver(_ send: NewsSend) async -> PipelineEngine<NewsSend>.Outcome {
        if let stale = staleBeforeSending(send) { return stale }
        // A copy of this (item, audience) from another partition may be in flight: wait for it.
        if case .duplicate(let origin) = await delivered.claim(send.deliveryKey) {
            metrics.skipped(origin).increment()
            return .delivered
        }
        do {
            let result = try await client.send(
                send.planned.notification,
                tagExpression: send.planned.tagExpression,
                deadline: send.staleAt,
                scheduledAt: send.planned.scheduledAt
            )
            let outcome = conclude(send, .success(result))
            if ledger != nil {
                await withCheckedContinuation { ended in recorded(send) { ended.resume() } }
            }
            return outcome
        } catch {
            return conclude(send, .failure(error))
        }
    }

    /// The usual path: no task, no continuation. The client's first attempt settles most sends on
    /// libcurl's thread, which tells the pipeline at once. A copy of a pair that is in flight
    /// must wait for it, which only `deliver` can.
    public func start(
        _ send: NewsSend,
        finished: @escaping @Sendable (PipelineEngine<NewsSend>.Outcome) -> Void
    ) -> Bool {
        if let stale = staleBeforeSending(send) {
            finished(stale)
            return true
        }
        switch delivered.tryClaim(send.deliveryKey) {
        case nil: return false
        case .duplicate(let origin):
            metrics.skipped(origin).increment()
            finished(.delivered)
        case .send:
            client.start(
                send.planned.notification,
                tagExpression: send.planned.tagExpression,
                deadline: send.staleAt,
                scheduledAt: send.planned.scheduledAt
            ) { [self] result in
                let outcome = conclude(send, result)
                guard case .success = result else { return finished(outcome) }
                recorded(send) { finished(outcome) }
            }
        }
        return true
    }

    public func abandonStarted() { client.cancelAll() }

    /// Waited past its deadline (behind others, for the hub, for a Retry-After): never sent.
    private func staleBeforeSending(_ send: NewsSend) -> PipelineEngine<NewsSend>.Outcome? {
        guard let staleAt = send.staleAt, clock() >= staleAt else { return nil }
        let last = forgetServerError(of: send)
        return classify(
            last
                ?? SendFailure(
                    reason: .stale,
                    status: nil,
                    message: "its deadline passed while it waited to be sent",
                    attempts: 0,
                    throttledAttempts: 0,
                    firstAttemptAt: 0,
                    lastAttemptAt: 0
                ),
            of: send
        )
    }

    /// An accepted send's record in the ledger, if there is one, and `then` when the send may end.
    /// At once while fewer than `recordsBehindLimit` records of ended sends are still being stored;
    /// else once its own record is stored, so its slot is not free before a restart would know not
    /// to send it again. Either way the record is handed to the ledger before the send ends, so a
    /// revoke's flush (before its commit) covers it. A SIGKILL can then repeat the sends in flight
    /// and at most `recordsBehindLimit` more; without the allowance every accepted send would hold
    /// its slot for the ledger's batching delay, and the slots would carry fewer sends a second.
    private func recorded(_ send: NewsSend, then: @escaping @Sendable () -> Void) {
        guard let ledger, let key = ledgerKey(of: send) else { return then() }
        let behind = recordsBehind.add(1, ordering: .relaxed).newValue
        guard behind <= recordsBehindLimit else {
            recordsBehind.subtract(1, ordering: .relaxed)
            return ledger.record(key, source: send.source.topicPartition, stored: then)
        }
        ledger.record(key, source: send.source.topicPartition) { [self] in
            recordsBehind.subtract(1, ordering: .relaxed)
        }
        then()
    }

    /// The send's key in the ledger; nil for a canary, which is never recorded.
    private func ledgerKey(of send: NewsSend) -> LedgerKey? {
        guard !send.isCanary else { return nil }
        return LedgerKey(
            hub: resourceURI,
            itemID: send.itemID,
            platform: send.planned.platform,
            audience: send.planned.tagExpression
        )
    }

    /// How a claimed send ended, counted.
    private func conclude(
        _ send: NewsSend,
        _ result: Result<SendResult, SendFailure>
    ) -> PipelineEngine<NewsSend>.Outcome {
        switch result {
        case .success(let result):
            delivered.finished(send.deliveryKey, accepted: true)
            _ = forgetServerError(of: send)
            if send.isCanary {
                canary.withLock { $0 }?.accepted(send, notificationID: result.notificationID)
            } else if let produced = send.source.timestampMs {
                metrics.recordEndToEnd(
                    category: send.category,
                    priority: send.priority,
                    milliseconds: max(0, Int64(clock() * 1000) - produced),
                    target: targets[send.priority.rawValue]
                )
            }
            // Scheduled, unless its time came while it waited and it went now.
            if let scheduledAt = send.planned.scheduledAt, let id = result.scheduledID {
                scheduled(send, id: id, at: scheduledAt)
            }
            hubMetrics.sendLatency.recordNanoseconds(result.latency.inNanoseconds)
            hubMetrics.retried.increment(by: result.attempts - 1)
            hubMetrics.throttled.increment(by: result.throttledAttempts)
            // Counted last: whoever sees it counted sees its latencies recorded (the demo waits on it).
            hubMetrics.sent(send.planned.notification.platform).increment()
            return .delivered
        case .failure(let error):
            delivered.finished(send.deliveryKey, accepted: false)
            // A throttled send goes again once its Retry-After is over: that is a retry too.
            hubMetrics.retried.increment(by: max(0, error.attempts - 1) + (error.owner == .throttling ? 1 : 0))
            hubMetrics.throttled.increment(by: error.throttledAttempts)
            return classify(error, of: send)
        }
    }

    /// A send the hub keeps for later: counted, logged, and its id announced on stdout as
    /// `{"ts":…,"scheduled":{"id":…,"itemId":…,"platform":…,"audience":…,"sendAt":…}}`
    /// (schemas/scheduled.schema.json), the one place a newsroom learns the id that cancels it.
    private func scheduled(_ send: NewsSend, id: String, at scheduledAt: Double) {
        hubMetrics.scheduled.increment()
        let sendAt = CivilDate.rfc3339(epochSeconds: scheduledAt, milliseconds: true)
        var metadata: Logger.Metadata = [
            "scheduledId": "\(id)", "itemId": "\(send.itemID)", "platform": "\(send.planned.platform)",
            "audience": "\(send.planned.tagExpression)", "sendAt": "\(sendAt)",
        ]
        if let hubName { metadata["hub"] = "\(hubName)" }
        logger.info("Scheduled notification", metadata: metadata)
        var w = JSONWriter(reservingCapacity: 256)
        w.beginObject()
        w.member("ts", CivilDate.rfc3339(epochSeconds: clock()))
        w.key("scheduled")
        w.beginObject()
        w.member("id", id)
        w.member("itemId", send.itemID)
        w.member("platform", send.planned.platform)
        w.member("audience", send.planned.tagExpression)
        w.member("sendAt", sendAt)
        if let hubName { w.member("hub", hubName) }
        w.endObject()
        w.endObject()
        announce(w.bytes)
    }

    /// Whose fault: the hub's (hold, pause, probe), throttling (wait), or the item's (dead-letter).
    ///
    /// A 5xx after every retry is the hub's, not the item's: while the send is still fresh it goes
    /// again as an unanswered one would (first in line while others are answered; held with the
    /// rest, the hub probed, once nothing is answered for a while), so an outage of the hub never
    /// turns into dead letters. Past its freshness bound it is dead-lettered as `server-error`; an
    /// item with no bound (`--max-age 0`, no `expiresAt`) is dead-lettered after its retries, as
    /// before, rather than retried for ever.
    func classify(_ error: SendFailure, of send: NewsSend) -> PipelineEngine<NewsSend>.Outcome {
        if error.reason == .serverError, let staleAt = send.staleAt, clock() < staleAt {
            // Sends that leave without ending here (a rebalance took their partition) leave their entry
            // behind: past a bound the map starts again, costing only the reason of a few dead letters.
            serverErrors.withLock { errors in
                if errors.count >= Self.serverErrorsKept { errors.removeAll(keepingCapacity: true) }
                errors[send.deliveryKey] = error
                serverErrorCount.store(errors.count, ordering: .relaxed)
            }
            if send.isCanary { canary.withLock { $0 }?.failed(send, reason: error.reason, final: false) }
            return .hubUnavailable(reason: error.summary, noAnswer: true)
        }
        // Its deadline came while the hub kept answering 5xx: that, not the clock, is why it did not go.
        let error =
            error.reason == .stale && (500...599).contains(error.status ?? 0)
            ? SendFailure(
                reason: .serverError,
                status: error.status,
                message: error.message,
                attempts: error.attempts,
                throttledAttempts: error.throttledAttempts,
                firstAttemptAt: error.firstAttemptAt,
                lastAttemptAt: error.lastAttemptAt
            )
            : error
        if error.owner != .nobody { _ = forgetServerError(of: send) }
        let notTheItems = PipelineEngine<NewsSend>.Outcome(notTheItemsFault: error)
        if error.owner == .hub { canary.withLock { $0 }?.noteHubFailure(error.reason) }
        if send.isCanary, error.owner != .nobody {
            canary.withLock { $0 }?.failed(send, reason: error.reason, final: notTheItems == nil)
            // A failed canary is reported by the canary; a dead-lettered one would only be
            // replayed later, proving nothing.
            if notTheItems == nil { return .finishedElsewhere }
        }
        if let notTheItems { return notTheItems }
        var metadata: Logger.Metadata = [
            "itemId": "\(send.itemID)", "platform": "\(send.planned.platform)",
            "audience": "\(send.planned.tagExpression)",
            "reason": "\(error.reason)", "status": "\(error.status.map(String.init) ?? "-")",
            "attempts": "\(error.attempts)", "error": "\(error.message)",
        ]
        if let hubName { metadata["hub"] = "\(hubName)" }
        if error.reason == .stale {
            metrics.stale.increment()
            logger.warning("Send too late: dead-lettered, not sent", metadata: metadata)
        } else {
            hubMetrics.failed.increment()
            logger.error("Send failed", metadata: metadata)
        }
        return .failed(
            DeadLetterRecord(
                reason: error.reason.name,
                error: error.message,
                status: error.status,
                attempts: error.attempts,
                message: send.source.value,
                itemID: send.itemID,
                category: send.category,
                audience: send.planned.tagExpression,
                platform: send.planned.platform,
                hub: hubName,
                source: send.source,
                firstAttemptAt: error.firstAttemptAt,
                lastAttemptAt: error.lastAttemptAt
            )
        )
    }
}

extension PipelineEngine.Outcome {
    /// How a failure that is not the item's fault ends (cancelled, throttled, the hub's); nil
    /// for an item failure, which the caller dead-letters with what it knows of the item.
    public init?(notTheItemsFault error: SendFailure) {
        switch error.owner {
        case .nobody: self = .abandoned
        case .throttling: self = .throttled(retryAfter: error.retryAfter)
        case .hub:
            self = .hubUnavailable(
                reason: error.summary,
                noAnswer: error.status == nil && (error.reason == .transport || error.reason == .timeout)
            )
        case .item: return nil
        }
    }
}

/// Who hears the client's failed attempts; installed once the pipeline exists.
final class AttemptListener: Sendable {
    private let listener = Mutex<(@Sendable (AttemptFailure) -> Void)?>(nil)

    func set(_ listener: @escaping @Sendable (AttemptFailure) -> Void) { self.listener.withLock { $0 = listener } }

    func fire(_ failure: AttemptFailure) { listener.withLock { $0 }?(failure) }
}

extension AttemptFailure {
    /// What a retried attempt says about hub number `hub`; nil when it says nothing (it answered).
    init?(_ reason: FailureReason, status: Int?, hub: Int = 0) {
        switch reason {
        case .timeout where status == nil, .transport:
            self = .noAnswer(reason: "\(reason): no answer from the hub", hub: hub)
        default: return nil
        }
    }
}
