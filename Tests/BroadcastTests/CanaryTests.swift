import Foundation
import Kafka
import Logging
import News
import NotificationHubs
import Synchronization
import TestSupport
import Testing

@testable import Broadcast

/// The canary's book of outcomes, driven by events with the time given.
@Suite struct CanaryBookTests {
    static func request(_ id: String = "c1", at: Int64 = 1_000, deadline: Int64 = 61_000) -> CanaryRequest {
        CanaryRequest(id: id, requestedAtMs: at, deadlineMs: deadline, by: "a")
    }

    static func finished(_ actions: [CanaryBook.Action]) -> CanaryResult? {
        guard actions.count == 1, case .finish(let result) = actions[0] else { return nil }
        return result
    }

    @Test func acceptedWithAnIdIsVerifiedByItsTelemetry() throws {
        var book = CanaryBook(instance: "a")
        book.requested(Self.request())
        #expect(book.taken(Self.request(), nowMs: 1_010).0 == .send)
        #expect(
            book.accepted(id: "c1", notificationID: "n7", nowMs: 1_050) == [
                .verify(id: "c1", notificationID: "n7", atMs: 1_550)
            ]
        )
        // Not final yet: asked again; then final, with two devices reached.
        #expect(
            book.details(id: "c1", NotificationDetails(state: "Processing"), nowMs: 1_600) == [
                .verify(id: "c1", notificationID: "n7", atMs: 2_100)
            ]
        )
        #expect(
            book.detailsUnavailable(id: "c1", status: 404, message: "none yet", nowMs: 2_100) == [
                .verify(id: "c1", notificationID: "n7", atMs: 2_600)
            ]
        )
        let result = try #require(
            Self.finished(
                book.details(
                    id: "c1",
                    NotificationDetails(state: "Completed", platforms: [("Apns", [("Success", 2)])]),
                    nowMs: 2_700
                )
            )
        )
        #expect(
            result
                == CanaryResult(
                    id: "c1",
                    outcome: .verified,
                    endToEndMs: 50,
                    devices: 2,
                    notificationId: "n7",
                    by: "a",
                    atMs: 2_700
                )
        )
        #expect(book.entries.isEmpty)
        // Reported once: the same request taken again (a consumer that caught up) is not sent again.
        #expect(book.taken(Self.request(), nowMs: 2_800).0 == .ignored)
    }

    @Test func telemetryThatReachedNobodyIsAFailure() throws {
        for (details, reason) in [
            (NotificationDetails(state: "NoTargetFound"), "no-target"),
            (NotificationDetails(state: "Completed", platforms: [("Apns", [("InvalidCredentials", 3)])]), "no-device"),
            (NotificationDetails(state: "Abandoned"), "abandoned"),
        ] {
            var book = CanaryBook(instance: "a")
            _ = book.taken(Self.request(), nowMs: 1_000)
            _ = book.accepted(id: "c1", notificationID: "n", nowMs: 1_100)
            let result = try #require(Self.finished(book.details(id: "c1", details, nowMs: 1_700)))
            #expect(result.outcome == .failed && result.reason == reason, "\(details)")
        }
    }

    @Test func withoutTelemetryItIsAcceptedAndSaysWhy() throws {
        var book = CanaryBook(instance: "a")
        _ = book.taken(Self.request("c1"), nowMs: 1_000)
        let noID = try #require(Self.finished(book.accepted(id: "c1", notificationID: nil, nowMs: 1_200)))
        #expect(noID.outcome == .accepted && noID.endToEndMs == 200 && noID.reason?.contains("Standard") == true)

        // Refused once (a Basic hub): accepted, and never asked again in this process.
        _ = book.taken(Self.request("c2"), nowMs: 1_000)
        _ = book.accepted(id: "c2", notificationID: "n2", nowMs: 1_100)
        let refused = try #require(
            Self.finished(book.detailsUnavailable(id: "c2", status: 403, message: "tier", nowMs: 1_600))
        )
        #expect(refused.outcome == .accepted && refused.reason?.contains("HTTP 403") == true)
        _ = book.taken(Self.request("c3"), nowMs: 1_000)
        let next = try #require(Self.finished(book.accepted(id: "c3", notificationID: "n3", nowMs: 1_100)))
        #expect(next.outcome == .accepted && next.notificationId == "n3")

        // Still not final at the deadline: accepted, not failed (the hub took it).
        book = CanaryBook(instance: "a")
        _ = book.taken(Self.request("c4", deadline: 2_000), nowMs: 1_000)
        _ = book.accepted(id: "c4", notificationID: "n4", nowMs: 1_100)
        let late = try #require(Self.finished(book.tick(nowMs: 2_000, owning: true)))
        #expect(late.outcome == .accepted && late.id == "c4")
    }

    @Test func aDeadlineGivesTheReasonItCouldNotGo() throws {
        var book = CanaryBook(instance: "a")
        // Held for the hub: its last attempt's reason.
        _ = book.taken(Self.request("held", deadline: 5_000), nowMs: 1_000)
        #expect(book.failed(id: "held", reason: "unauthorized", final: false, nowMs: 1_500).isEmpty)
        #expect(book.tick(nowMs: 4_999, owning: true).isEmpty)
        #expect(try #require(Self.finished(book.tick(nowMs: 5_000, owning: true))).reason == "unauthorized")

        // Never attempted (another send probes the hub): the hub's reason while the pipeline holds
        // it, else undelivered. A failure the pipeline did not act on (one dropped connection) is no reason.
        book.hubFailed(reason: "transport")
        _ = book.taken(Self.request("blip", deadline: 5_000), nowMs: 1_000)
        #expect(try #require(Self.finished(book.tick(nowMs: 5_000, owning: true))).reason == "undelivered")
        book.hubFailed(reason: "tls")
        book.hubUnavailable()
        _ = book.taken(Self.request("waiting", deadline: 5_000), nowMs: 1_000)
        #expect(try #require(Self.finished(book.tick(nowMs: 5_000, owning: true))).reason == "tls")
        // The sender found it past its deadline before the clock did: the same reason.
        _ = book.taken(Self.request("seen-stale", deadline: 5_000), nowMs: 1_000)
        #expect(
            Self.finished(book.failed(id: "seen-stale", reason: "stale", final: true, nowMs: 5_001))?.reason == "tls"
        )
        book.hubAvailable()
        _ = book.taken(Self.request("queued", deadline: 5_000), nowMs: 1_000)
        #expect(try #require(Self.finished(book.tick(nowMs: 5_000, owning: true))).reason == "undelivered")

        // Written here but never taken: this instance's failure while it holds the partition,
        // another's to report once the partition moved.
        book.requested(Self.request("lost", deadline: 5_000))
        #expect(try #require(Self.finished(book.tick(nowMs: 5_000, owning: true))).reason == "not-consumed")
        book.requested(Self.request("moved", deadline: 5_000))
        #expect(book.tick(nowMs: 5_000, owning: false).isEmpty)
        #expect(book.entries.isEmpty)

        // Taken after its deadline (the consumer was behind): never sent.
        let late = book.taken(Self.request("late", deadline: 5_000), nowMs: 5_001)
        #expect(late.0 == .late && Self.finished(late.1)?.reason == "stale")
        // Long past it (a new group reading the topic's history): not a failure of now.
        #expect(
            book.taken(Self.request("history", deadline: 5_000), nowMs: 5_000 + CanaryBook.historyAfterMs) == (
                .ignored, []
            )
        )

        // The item's fault: reported at once.
        _ = book.taken(Self.request("bad", deadline: 9_000), nowMs: 6_000)
        #expect(
            Self.finished(book.failed(id: "bad", reason: "bad-request", final: true, nowMs: 6_100))?.reason
                == "bad-request"
        )
    }
}

/// The canary through the real preparer and hub sender, over an in-memory hub, with its service
/// loop running on a manual clock: what it sends, what it reports and where. (The time limit is
/// only a guard, so that a regression fails instead of hanging: alone these take 10 ms, in a full
/// run on 2 cores, with every server and binary of the other suites starting, up to a minute.)
@Suite(.timeLimit(.minutes(5))) struct CanaryShellTests {
    /// A value the rig's closures and the test share.
    final class Cell<Value: Sendable>: Sendable {
        private let value: Mutex<Value>
        init(_ value: Value) { self.value = Mutex(value) }
        func withLock<R>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
    }

    final class Rig: Sendable {
        static let origin: Int64 = 1_800_000_000_000
        /// The service's loops sleep on it; the tests move it.
        let clock = ManualClock()
        var nowMs: Int64 { Self.origin + clock.now.offset.inMilliseconds }
        let published = Cell<[CanaryRecord]>([])
        let lines = Cell<[String]>([])
        let results: AsyncStream<CanaryResult>
        private let resultWriter: AsyncStream<CanaryResult>.Continuation
        let canary: Canary
        let sender: HubSender
        let preparer: NewsPreparer

        init(
            hub: @escaping @Sendable (HTTPRequest) -> HTTPResponse,
            details: NotificationDetails = NotificationDetails(
                state: "Completed",
                platforms: [("Apns", [("Success", 1)])]
            )
        ) throws {
            (results, resultWriter) = AsyncStream.makeStream()
            let clock = self.clock, published = self.published, lines = self.lines, writer = resultWriter
            let nowMs: @Sendable () -> Int64 = { Self.origin + clock.now.offset.inMilliseconds }
            var seams = Canary.Seams(
                publish: { record in
                    published.withLock { $0.append(record) }
                    if case .result(let result) = record { writer.yield(result) }
                },
                owns: { true },
                details: { _ in details }
            )
            seams.nowMs = nowMs
            seams.sleep = { try await clock.sleep(for: $0) }
            seams.write = { bytes in lines.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } }
            let logger = Logger(label: "hubcast.tests")
            canary = Canary(
                configuration: Canary.Configuration(tag: "test-devices", instance: "i1"),
                seams: seams,
                logger: logger
            )
            let connection = try ConnectionString(
                parsing: "Endpoint=sb://127.0.0.1:1/;SharedAccessKeyName=Full;SharedAccessKey=Zm9yLXRlc3RzLW9ubHk="
            )
            let metrics = PipelineMetrics(categories: Categories.seedNames)
            sender = HubSender(
                configuration: NotificationHubConfiguration(connection: connection, hubName: "breaking"),
                transport: InMemoryTransport(hub),
                delivered: DeliveredSends(capacity: 10),
                metrics: metrics,
                logger: logger,
                clock: { Double(nowMs()) / 1000 }
            )
            sender.attach(canary)
            preparer = NewsPreparer(
                categories: try Categories(),
                maxMessageBytes: 65_536,
                delivered: sender.delivered,
                metrics: metrics,
                logger: logger,
                canary: canary,
                clock: { Double(nowMs()) / 1000 }
            )
        }

        func message(_ record: CanaryRecord) -> KafkaMessage {
            KafkaMessage(topic: Canary.defaultTopic, partition: 0, offset: 1, value: record.bytes)
        }

        func request(_ id: String, deadlineIn ms: Int64 = 60_000) -> CanaryRequest {
            let at = nowMs
            return CanaryRequest(id: id, requestedAtMs: at, deadlineMs: at + ms, by: "i1")
        }

        /// The one send the preparer makes of a request.
        func send(for request: CanaryRequest) throws -> NewsSend {
            var preparer = self.preparer
            guard case .sends(let sends, let priority, _, _) = preparer.prepare(message(.request(request))),
                sends.count == 1
            else {
                throw CanaryTestError.notPlanned
            }
            #expect(priority == .breaking && sends[0].isCanary && sends[0].planned.tagExpression == "test-devices")
            return sends[0]
        }

        /// The next result written to the topic.
        func nextResult() async -> CanaryResult? {
            var iterator = results.makeAsyncIterator()
            return await iterator.next()
        }
    }

    enum CanaryTestError: Error { case notPlanned }

    static func accepted(_ request: HTTPRequest) -> HTTPResponse {
        HTTPResponse(
            status: 201,
            headers: [
                HTTPHeader("location", "https://ns.servicebus.windows.net/breaking/messages/42?api-version=2020-06")
            ],
            body: [],
            elapsed: .milliseconds(3)
        )
    }

    @Test func aCanaryGoesToItsTagAtBreakingPriorityAndIsVerified() async throws {
        let rig = try Rig(hub: Self.accepted)
        let service = Task { try await rig.canary.run() }
        defer { service.cancel() }
        let send = try rig.send(for: rig.request("c1"))
        rig.clock.advance(by: .milliseconds(25))
        guard case .delivered = await SendPath.started.send(send, through: rig.sender) else {
            Issue.record("not delivered")
            return
        }
        // Its telemetry is read half a second after the hub took it: the ticker and that read both sleep.
        await rig.clock.waitForSleepers(2)
        rig.clock.advance(by: .milliseconds(500))
        let result = try #require(await rig.nextResult())
        #expect(
            result.outcome == .verified && result.devices == 1 && result.notificationId == "42"
                && result.endToEndMs == 25,
            "\(result)"
        )
        let line = try #require(rig.lines.withLock { $0.first })
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(
            (json["canary"] as? [String: Any])?["outcome"] as? String == "verified" && json["ts"] is String,
            "\(line)"
        )
        // A result read back from the topic is nothing for the pipeline to send.
        var preparer = rig.preparer
        guard case .done = preparer.prepare(rig.message(.result(result))) else {
            Issue.record("a result was planned")
            return
        }
        guard
            case .done = preparer.prepare(
                KafkaMessage(topic: Canary.defaultTopic, partition: 0, offset: 2, value: Array("{}".utf8))
            )
        else {
            Issue.record("junk on the canary topic was planned")
            return
        }
    }

    @Test func refusedCredentialsHoldTheCanaryAndItFailsAtItsDeadlineSayingWhy() async throws {
        let rig = try Rig(hub: { _ in
            HTTPResponse(
                status: 401,
                headers: [],
                body: Array("<Error><Code>401</Code><Detail>no</Detail></Error>".utf8),
                elapsed: .zero
            )
        })
        let service = Task { try await rig.canary.run() }
        defer { service.cancel() }
        let send = try rig.send(for: rig.request("c1", deadlineIn: 2_000))
        guard case .hubUnavailable = await SendPath.started.send(send, through: rig.sender) else {
            Issue.record("a 401 did not hold the send")
            return
        }
        await rig.clock.waitForSleepers(1)
        rig.clock.advance(by: .milliseconds(2_000))
        let result = try #require(await rig.nextResult())
        #expect(result.outcome == .failed && result.reason == "unauthorized", "\(result)")
    }

    @Test func aCanaryTheHubRefusesIsReportedNotDeadLettered() async throws {
        let rig = try Rig(hub: { _ in HTTPResponse(status: 400, headers: [], body: [], elapsed: .zero) })
        let service = Task { try await rig.canary.run() }
        defer { service.cancel() }
        let send = try rig.send(for: rig.request("c1"))
        guard case .finishedElsewhere = await SendPath.started.send(send, through: rig.sender) else {
            Issue.record("a refused canary was dead-lettered or held")
            return
        }
        let result = try #require(await rig.nextResult())
        #expect(result.outcome == .failed && result.reason == "bad-request", "\(result)")
    }
}

/// Whatever is written to the canary topic, the pipeline plans at most one send to the canary tag,
/// within the longest deadline, and never crashes.
@Suite(.onComputeThreads) struct CanaryFuzzTests {
    @Test func mutatedRecordsAreSkippedOrPlannedAsOneBoundedSend() throws {
        let rig = try CanaryShellTests.Rig(hub: CanaryShellTests.accepted)
        let now = rig.nowMs
        let seeds = [
            CanaryRecord.request(CanaryRequest(id: "c", requestedAtMs: now, deadlineMs: now + 9_999_999_999, by: "x"))
                .bytes,
            CanaryRecord.result(CanaryResult(id: "c", outcome: .failed, reason: "r", by: "x", atMs: now)).bytes,
            Array(#"{"request":{"id":"","requestedAtMs":-1,"deadlineMs":9223372036854775807,"by":"\u0000"}}"#.utf8),
            Array(String(repeating: "[", count: 5000).utf8),
        ]
        var generator = SystemRandomNumberGenerator()
        var planned = 0
        for round in 0..<3000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0..<Int.random(in: 0...4, using: &generator) where !bytes.isEmpty {
                let at = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0...2, using: &generator) {
                case 0: bytes[at] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.remove(at: at)
                default: bytes.insert(bytes[at], at: at)
                }
            }
            var preparer = rig.preparer
            switch preparer.prepare(
                KafkaMessage(topic: Canary.defaultTopic, partition: 0, offset: Int64(round), value: bytes)
            ) {
            case .done: break
            case .deadLetter: Issue.record("a canary record was dead-lettered")
            case .sends(let sends, let priority, let freshFor, _):
                planned += 1
                // On through the rest of its life: accepted (its latency computed), then its deadline.
                rig.canary.accepted(sends[0], notificationID: "n")
                rig.canary.failed(sends[0], reason: .stale, final: true)
                #expect(
                    sends.count == 1 && sends[0].isCanary && sends[0].planned.tagExpression == "test-devices"
                        && priority == .breaking
                )
                #expect((freshFor ?? .zero) <= .milliseconds(CanaryBook.longestDeadlineMs))
            }
        }
        #expect(planned > 0, "no mutation was a request: the fuzzing proves nothing")
    }
}

/// What the book refuses to keep: other groups' requests, implausible ones, a flood.
@Suite struct CanaryBookBoundsTests {
    @Test func otherGroupsImplausibleRequestsAndAFloodAreLeftAlone() {
        var book = CanaryBook(instance: "a", group: "news")
        let now: Int64 = 1_800_000_000_000
        func request(
            _ id: String,
            group: String? = "news",
            at: Int64 = now,
            deadline: Int64 = now + 60_000
        ) -> CanaryRequest {
            CanaryRequest(id: id, requestedAtMs: at, deadlineMs: deadline, by: "x", group: group)
        }
        #expect(book.taken(request("other", group: "sports"), nowMs: now).0 == .ignored)
        #expect(book.taken(request("any", group: nil), nowMs: now).0 == .send)
        #expect(book.taken(request("ancient", at: .min, deadline: now + 1), nowMs: now).0 == .ignored)
        #expect(book.taken(request("future", at: now + 2 * 86_400_000, deadline: .max), nowMs: now).0 == .ignored)
        #expect(book.taken(request("backwards", deadline: now - 1), nowMs: now).0 == .ignored)
        #expect(book.taken(request(""), nowMs: now).0 == .ignored)
        for n in 0..<40 { _ = book.taken(request("flood-\(n)"), nowMs: now) }
        #expect(book.entries.count == CanaryBook.mostOutstanding)
        // A far deadline is brought within the longest.
        var fresh = CanaryBook(instance: "a", group: "news")
        _ = fresh.taken(request("far", deadline: .max), nowMs: now)
        #expect(fresh.entries["far"]?.request.deadlineMs == now + CanaryBook.longestDeadlineMs)
    }

    @Test func aKeyRefusedForTelemetryIsAskedAgainButATierRefusalIsNot() throws {
        var book = CanaryBook(instance: "a")
        let request = CanaryRequest(id: "c", requestedAtMs: 1_000, deadlineMs: 10_000, by: "a")
        _ = book.taken(request, nowMs: 1_000)
        _ = book.accepted(id: "c", notificationID: "n", nowMs: 1_100)
        #expect(
            book.detailsUnavailable(id: "c", status: 401, message: "key", nowMs: 1_600) == [
                .verify(id: "c", notificationID: "n", atMs: 2_100)
            ]
        )
        #expect(book.telemetryRefused == nil)
        let verified = book.details(
            id: "c",
            NotificationDetails(state: "DetailedStateAvailable", platforms: [("Apns", [("Success", 1)])]),
            nowMs: 2_200
        )
        #expect(CanaryBookTests.finished(verified)?.outcome == .verified)
    }
}
