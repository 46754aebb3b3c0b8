import Kafka
import Logging
import News
import NotificationHubs
import Synchronization
import Testing

@testable import Broadcast

/// What the news preparer and the hub sender make of an item's priority and age.
@Suite struct FreshnessAndPriorityTests {
    static let logger = Logger(label: "hubcast.tests")
    static let now = 1_800_000_000.0

    func preparer(categoryPriority: [String: Priority] = [:], maxAge: Duration? = .seconds(1200)) throws -> NewsPreparer
    {
        NewsPreparer(
            categories: try Categories(),
            maxMessageBytes: 65_536,
            delivered: DeliveredSends(capacity: 100),
            metrics: PipelineMetrics(categories: Categories.seedNames),
            logger: Self.logger,
            categoryPriority: categoryPriority,
            maxAge: maxAge,
            clock: { Self.now }
        )
    }

    func message(_ json: String, topic: String = "news.world", producedSecondsAgo age: Double = 1) -> KafkaMessage {
        KafkaMessage(
            topic: topic,
            partition: 0,
            offset: 7,
            value: Array(json.utf8),
            timestampMs: Int64((Self.now - age) * 1000)
        )
    }

    @Test func anItemsPriorityWinsOverItsCategorysWhichWinsOverNormal() throws {
        var p = try preparer(categoryPriority: ["Sports": .bulk])
        let cases: [(String, String, Priority)] = [
            (#"{"id":"a","headline":"h","priority":"breaking"}"#, "news.sports", .breaking),
            (#"{"id":"b","headline":"h"}"#, "news.sports", .bulk),
            (#"{"id":"c","headline":"h"}"#, "news.world", .normal),
            (#"{"id":"d","headline":"h","priority":"bulk"}"#, "news.world", .bulk),
        ]
        for (json, topic, expected) in cases {
            guard case .sends(let sends, let priority, _, _) = p.prepare(message(json, topic: topic)) else {
                Issue.record("\(json) was not planned")
                continue
            }
            #expect(priority == expected, "\(json) on \(topic)")
            #expect(sends.allSatisfy { $0.priority == expected })
        }
    }

    @Test func anItemOlderThanTheMaximumAgeIsDeadLetteredAsStaleAndAYoungerOneCarriesItsDeadline() throws {
        var p = try preparer(maxAge: .seconds(600))
        guard
            case .deadLetter(let record) = p.prepare(message(#"{"id":"old","headline":"h"}"#, producedSecondsAgo: 601))
        else {
            Issue.record("an item 601 s old was not dead-lettered")
            return
        }
        #expect(record.reason == "stale")
        #expect(record.error.contains("601 s ago"), "\(record.error)")
        guard
            case .sends(let sends, _, let freshFor, _) = p.prepare(
                message(#"{"id":"young","headline":"h"}"#, producedSecondsAgo: 100)
            )
        else {
            Issue.record("an item 100 s old was not planned")
            return
        }
        #expect(freshFor == .seconds(500))
        #expect(sends.first?.staleAt == Self.now + 500)
    }

    @Test func expiresAtBoundsAnItemInsteadOfTheMaximumAgeAndNoBoundMeansNone() throws {
        var p = try preparer(maxAge: .seconds(60))
        // Two hours old but expiring in an hour: its own expiry decides.
        guard
            case .sends(_, _, let freshFor, _) = p.prepare(
                message(
                    #"{"id":"e","headline":"h","expiresAt":"2027-01-15T09:00:00Z"}"#,
                    producedSecondsAgo: 7200
                )
            )
        else {
            Issue.record("an item with a later expiresAt was not planned")
            return
        }
        #expect(freshFor == .seconds(Timestamp(rfc3339: "2027-01-15T09:00:00Z")!.epochSeconds - Self.now))
        var unbounded = try preparer(maxAge: nil)
        guard
            case .sends(let sends, _, let none, _) = unbounded.prepare(
                message(#"{"id":"u","headline":"h"}"#, producedSecondsAgo: 86_400)
            )
        else {
            Issue.record("with no maximum age an old item was not planned")
            return
        }
        #expect(none == nil && sends.first?.staleAt == nil)
    }

    /// A sender to a hub on 127.0.0.1 that `transport` answers for.
    func hubSender(
        _ transport: some HTTPTransport,
        retry: RetryPolicy = RetryPolicy(),
        ledger: (any DeliveryLedger)? = nil,
        recordsBehind: Int = 0,
        clock: @escaping @Sendable () -> Double = { FreshnessAndPriorityTests.now }
    ) throws -> HubSender {
        let connection = try ConnectionString(
            parsing: "Endpoint=sb://127.0.0.1:1/;SharedAccessKeyName=Full;SharedAccessKey=Zm9yLXRlc3RzLW9ubHk="
        )
        var configuration = NotificationHubConfiguration(connection: connection, hubName: "breaking")
        configuration.retry = retry
        return HubSender(
            configuration: configuration,
            transport: transport,
            delivered: DeliveredSends(capacity: 10),
            ledger: ledger,
            metrics: PipelineMetrics(categories: ["World"]),
            logger: Self.logger,
            recordsBehindLimit: recordsBehind,
            clock: clock
        )
    }

    @Test(arguments: SendPath.allCases) func aSendPastItsDeadlineIsDeadLetteredWithoutARequest(
        path: SendPath
    ) async throws {
        let requests = Mutex(0)
        let transport = InMemoryTransport { _ in
            requests.withLock { $0 += 1 }
            return HTTPResponse(status: 201, headers: [], body: [], elapsed: .zero)
        }
        let sender = try hubSender(transport)
        let planned = PlannedSend(tagExpression: "World", properties: [("messageParam", "m")])
        let source = message(#"{"id":"s","headline":"h"}"#)
        let stale = NewsSend(
            planned: planned,
            itemID: "s",
            category: "World",
            source: source,
            priority: .breaking,
            staleAt: Self.now - 1
        )
        guard case .failed(let record) = await path.send(stale, through: sender) else {
            Issue.record("a stale send was not dead-lettered")
            return
        }
        #expect(record.reason == "stale")
        #expect(requests.withLock { $0 } == 0)
        let fresh = NewsSend(planned: planned, itemID: "f", category: "World", source: source, staleAt: Self.now + 60)
        guard case .delivered = await path.send(fresh, through: sender) else {
            Issue.record("a fresh send was not delivered")
            return
        }
        #expect(requests.withLock { $0 } == 1)
    }

    @Test func aCopyOfAPairInFlightIsNotStartedButWaitsForItInATask() async throws {
        let transport = InMemoryTransport(status: 201)
        let sender = try hubSender(transport)
        let send = NewsSend(
            planned: PlannedSend(tagExpression: "World", properties: [("messageParam", "m")]),
            itemID: "s",
            category: "World",
            source: message(#"{"id":"s","headline":"h"}"#)
        )
        // Another partition's copy of the same pair is being sent.
        #expect(sender.delivered.tryClaim(send.deliveryKey) == .send)
        #expect(!sender.start(send) { _ in Issue.record("a copy was started beside the one in flight") })
        let copy = Task { await sender.deliver(send) }
        while sender.delivered.waiting(send.deliveryKey) == 0 { await Task.yield() }
        sender.delivered.finished(send.deliveryKey, accepted: true)
        guard case .delivered = await copy.value else {
            Issue.record("the copy did not end as delivered")
            return
        }
        // Once accepted, a started copy ends at once as delivered.
        guard case .delivered = await SendPath.started.send(send, through: sender) else {
            Issue.record("a started copy of an accepted pair was sent again")
            return
        }
    }

    @Test(arguments: SendPath.allCases)
    func a5xxGoesAgainWhileFreshAndIsDeadLetteredAsServerErrorOncePastItsBound(path: SendPath) async throws {
        let now = Mutex(Self.now)
        let transport = InMemoryTransport(status: 503)
        let sender = try hubSender(
            transport,
            retry: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(1), maxDelay: .milliseconds(1)),
            clock: { now.withLock { $0 } }
        )
        let send = NewsSend(
            planned: PlannedSend(tagExpression: "World", properties: [("messageParam", "m")]),
            itemID: "s",
            category: "World",
            source: message(#"{"id":"s","headline":"h"}"#),
            staleAt: Self.now + 60
        )
        guard case .hubUnavailable(_, let noAnswer) = await path.send(send, through: sender) else {
            Issue.record("a fresh send answered 503 was dead-lettered")
            return
        }
        #expect(noAnswer, "goes again as an unanswered send would: held only if the hub fails for the others too")
        // Its bound passes before it goes again: dead-lettered with the hub's last answer, not a bare `stale`.
        now.withLock { $0 += 61 }
        guard case .failed(let record) = await path.send(send, through: sender) else {
            Issue.record("a send past its bound was not dead-lettered")
            return
        }
        #expect(
            record.reason == "server-error" && record.status == 503,
            "\(record.reason) \(String(describing: record.status))"
        )
        // Without a bound (--max-age 0, no expiresAt), a 5xx after its retries is dead-lettered at once, as before.
        let unbounded = NewsSend(planned: send.planned, itemID: "u", category: "World", source: send.source)
        guard case .failed(let other) = await path.send(unbounded, through: sender) else {
            Issue.record("a send with no bound was retried for ever")
            return
        }
        #expect(other.reason == "server-error")
    }
}

/// The two ways the pipeline hands a send to the hub sender: they must end alike.
enum SendPath: CaseIterable, Sendable {
    /// `deliver`, in a task (retries, a copy waiting for another in flight, every test double).
    case task
    /// `start`, with no task: the usual path in `run`.
    case started

    func send(_ send: NewsSend, through sender: HubSender) async -> PipelineEngine<NewsSend>.Outcome {
        switch self {
        case .task:
            return await sender.deliver(send)
        case .started:
            return await withCheckedContinuation { continuation in
                guard !sender.start(send, finished: { continuation.resume(returning: $0) }) else { return }
                Issue.record("a send that waits for nobody was not started")
                Task { continuation.resume(returning: await sender.deliver(send)) }
            }
        }
    }
}
