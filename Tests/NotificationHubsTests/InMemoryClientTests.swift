import Foundation
import Logging
import NotificationHubs
import Synchronization
import Testing

/// The client over `InMemoryTransport`: the request it builds, and how it retries, with no socket.
@Suite struct InMemoryClientTests {
    static let key = "Zm9yLXRlc3RzLW9ubHk="

    /// The backoff waits the client asked for, in order (none is slept).
    final class Sleeps: Sendable {
        let list = Mutex<[Duration]>([])
    }

    func client(_ transport: some HTTPTransport, sleeps: Sleeps = Sleeps()) throws -> NotificationHubClient {
        let connection = try ConnectionString(
            parsing:
                "Endpoint=sb://hubcast-ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=\(Self.key)"
        )
        var config = NotificationHubConfiguration(connection: connection, hubName: "breaking")
        config.retry = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), maxDelay: .seconds(4))
        return NotificationHubClient(
            configuration: config,
            transport: transport,
            logger: Logger(label: "t"),
            sleep: { duration in sleeps.list.withLock { $0.append(duration) } },
            random: { 0.5 }
        )
    }

    /// A transport giving these answers in turn, the last one from then on.
    func answering(_ answers: [Result<HTTPResponse, TransportError>]) -> InMemoryTransport {
        let next = Mutex(0)
        return InMemoryTransport { _ throws(TransportError) in
            let n = next.withLock { taken in
                defer { taken += 1 }
                return min(taken, answers.count - 1)
            }
            return try answers[n].get()
        }
    }

    @Test func aTemplateSendIsOneRequestToTheMessagesURL() async throws {
        let seen = Mutex<[HTTPRequest]>([])
        let transport = InMemoryTransport { request in
            seen.withLock { $0.append(request) }
            return HTTPResponse(
                status: 201,
                headers: [
                    HTTPHeader(
                        "location",
                        "https://hubcast-ns.servicebus.windows.net/breaking/messages/42?api-version=2020-06"
                    )
                ]
            )
        }
        let result = try await client(transport).sendTemplate(
            properties: [("messageParam", "Quake")],
            tagExpression: "World || Science"
        )
        #expect(result.status == 201 && result.attempts == 1 && result.notificationID == "42")
        let request = try #require(seen.withLock { $0.first })
        #expect(request.method == .post)
        #expect(request.url == "https://hubcast-ns.servicebus.windows.net/breaking/messages/?api-version=2020-06")
        let headers = Dictionary(
            request.headers.map { ($0.name.lowercased(), $0.value) },
            uniquingKeysWith: { a, _ in a }
        )
        #expect(headers["servicebusnotification-format"] == "template")
        #expect(headers["servicebusnotification-tags"] == "World || Science")
        #expect(
            headers["authorization"]?.hasPrefix(
                "SharedAccessSignature sr=https%3a%2f%2fhubcast-ns.servicebus.windows.net%2fbreaking"
            ) == true
        )
        #expect(String(decoding: request.body, as: UTF8.self) == #"{"messageParam":"Quake"}"#)
    }

    /// A scheduled send goes to the scheduled notifications with its time in UTC to the
    /// millisecond; its id is the Location's last segment as it is; a cancel is one DELETE.
    @Test func aScheduledSendAndItsCancel() async throws {
        let seen = Mutex<[HTTPRequest]>([])
        let transport = InMemoryTransport { request in
            seen.withLock { $0.append(request) }
            return HTTPResponse(
                status: request.method == .delete ? 200 : 201,
                headers: [
                    HTTPHeader(
                        "location",
                        "https://hubcast-ns.servicebus.windows.net/breaking/schedulednotifications/7-637_x?api-version=2020-06"
                    )
                ]
            )
        }
        let hub = try client(transport)
        let apple = NativeNotification(platform: .apple, payload: Array(#"{"aps":{"alert":"a"}}"#.utf8))
        let result = try await hub.send(.native(apple), tagExpression: "World", scheduledAt: 1_800_000_000.25)
        #expect(result.scheduledID == "7-637_x" && result.notificationID == nil)
        try await hub.cancelScheduled(id: "7-637_x")
        let requests = seen.withLock { $0 }
        #expect(requests.map(\.method) == [.post, .delete])
        #expect(
            requests[0].url
                == "https://hubcast-ns.servicebus.windows.net/breaking/schedulednotifications/?api-version=2020-06"
        )
        #expect(requests[0].header("ServiceBusNotification-ScheduleTime") == "2027-01-15T08:00:00.250Z")
        #expect(requests[0].header("ServiceBusNotification-Format") == "apple")
        #expect(
            requests[1].url
                == "https://hubcast-ns.servicebus.windows.net/breaking/schedulednotifications/7-637_x?api-version=2020-06"
        )
    }

    /// A scheduled send whose time comes while it backs off goes now: the hub refuses a time in the past.
    @Test func aScheduledSendWhoseTimeCameDuringItsRetriesGoesNow() async throws {
        let seen = Mutex<[HTTPRequest]>([])
        let now = Mutex(1_800_000_000.0)
        let transport = InMemoryTransport { request in
            let n = seen.withLock {
                $0.append(request)
                return $0.count
            }
            guard n > 1 else { return HTTPResponse(status: 503) }
            return HTTPResponse(
                status: 201,
                headers: [
                    HTTPHeader(
                        "location",
                        "https://hubcast-ns.servicebus.windows.net/breaking/messages/5?api-version=2020-06"
                    )
                ]
            )
        }
        let connection = try ConnectionString(
            parsing:
                "Endpoint=sb://hubcast-ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=\(Self.key)"
        )
        var config = NotificationHubConfiguration(connection: connection, hubName: "breaking")
        config.retry = RetryPolicy(maxAttempts: 3, baseDelay: .seconds(1), maxDelay: .seconds(4))
        let hub = NotificationHubClient(
            configuration: config,
            transport: transport,
            logger: Logger(label: "t"),
            sleep: { _ in now.withLock { $0 += 2 } },
            random: { 0.5 },
            clock: { now.withLock { $0 } }
        )
        let result = try await hub.send(
            .template([("messageParam", "m")]),
            tagExpression: "World",
            scheduledAt: 1_800_000_001.5
        )
        #expect(result.scheduledID == nil && result.notificationID == "5" && result.attempts == 2)
        let requests = seen.withLock { $0 }
        #expect(
            requests[0].url.contains("/schedulednotifications/?")
                && requests[0].header("ServiceBusNotification-ScheduleTime") != nil
        )
        #expect(
            requests[1].url.contains("/messages/?") && requests[1].header("ServiceBusNotification-ScheduleTime") == nil
        )
        #expect(
            requests[1].header("Authorization") != nil && requests[1].header("ServiceBusNotification-Tags") == "World"
        )
    }

    @Test func a503IsRetriedWithBackoffAndAConnectionFailureToo() async throws {
        let transport = answering([
            .success(HTTPResponse(status: 503)), .failure(TransportError(.connection, message: "connection reset")),
            .success(HTTPResponse(status: 201)),
        ])
        let sleeps = Sleeps()
        let result = try await client(transport, sleeps: sleeps).sendTemplate(
            properties: [("messageParam", "x")],
            tagExpression: "World"
        )
        #expect(result.attempts == 3)
        // Full jitter at 0.5: half of 1 s, then half of 2 s.
        #expect(sleeps.list.withLock { $0 } == [.milliseconds(500), .seconds(1)])
    }

    @Test func aRefusedKeyIsTheHubsFaultAndNotRetriedForever() async throws {
        let attempts = Mutex(0)
        let transport = InMemoryTransport { _ in
            attempts.withLock { $0 += 1 }
            return HTTPResponse(
                status: 401,
                body: Array("<Error><Code>401</Code><Detail>the token&apos;s signature is wrong</Detail></Error>".utf8)
            )
        }
        let hub = try client(transport)
        do {
            _ = try await hub.sendTemplate(properties: [("messageParam", "x")], tagExpression: "World")
            Issue.record("a 401 was taken for a success")
        } catch {
            #expect(error.owner == .hub)
            #expect(error.message.contains("token's signature"))
        }
        #expect(attempts.withLock { $0 } == 2, "once more with a fresh token, then given up")
    }

    /// What a started send ended with, once its completion ran.
    func started(
        _ hub: NotificationHubClient,
        tagExpression: String = "World"
    ) async -> Result<SendResult, SendFailure> {
        await withCheckedContinuation { continuation in
            hub.startTemplate(properties: [("messageParam", "x")], tagExpression: tagExpression) {
                continuation.resume(returning: $0)
            }
        }
    }

    @Test func aStartedSendSettledByItsFirstAttemptIsTheSameRequestWithNoTask() async throws {
        let seen = Mutex<[HTTPRequest]>([])
        let transport = InMemoryTransport { request in
            seen.withLock { $0.append(request) }
            return HTTPResponse(
                status: 201,
                headers: [HTTPHeader("location", "https://h/breaking/messages/7?api-version=2020-06")]
            )
        }
        let hub = try client(transport)
        let result = try await started(hub).get()
        #expect(result.status == 201 && result.attempts == 1 && result.notificationID == "7")
        // The same request as the async path builds.
        _ = try await hub.sendTemplate(properties: [("messageParam", "x")], tagExpression: "World")
        let requests = seen.withLock { $0 }
        #expect(requests.count == 2)
        #expect(requests[0].url == requests[1].url && requests[0].body == requests[1].body)
        #expect(requests[0].headers == requests[1].headers)
    }

    @Test func aStartedSendRetriesInATaskAfterItsFirstAttemptAndRefreshesARefusedToken() async throws {
        let transport = answering([
            .success(HTTPResponse(status: 401)), .success(HTTPResponse(status: 503)),
            .success(HTTPResponse(status: 201)),
        ])
        let sleeps = Sleeps()
        let hub = try client(transport, sleeps: sleeps)
        let result = try await started(hub).get()
        #expect(result.attempts == 3)
        // No wait after the 401; after the 503 (the second attempt), half of 2 s.
        #expect(sleeps.list.withLock { $0 } == [.seconds(1)])
        #expect(hub.tokens.mintCount == 2, "a token minted again for the 401")
    }

    @Test func aStartedSendFailsAsTheAsyncOneDoes() async throws {
        let transport = InMemoryTransport(status: 400)
        let hub = try client(transport)
        guard case .failure(let error) = await started(hub) else {
            Issue.record("a 400 was taken for a success")
            return
        }
        #expect(error.reason == .badRequest && error.attempts == 1 && error.owner == .item)
        guard case .failure(let invalid) = await started(hub, tagExpression: "World &&") else {
            Issue.record("an invalid expression was sent")
            return
        }
        #expect(invalid.reason == .invalid && invalid.attempts == 0)
    }

    @Test func cancelAllEndsAStartedSendWaitingToRetry() async throws {
        let transport = InMemoryTransport(status: 503)
        let connection = try ConnectionString(
            parsing:
                "Endpoint=sb://hubcast-ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=\(Self.key)"
        )
        let backingOff = AsyncStream.makeStream(of: Void.self)
        let hub = NotificationHubClient(
            configuration: NotificationHubConfiguration(connection: connection, hubName: "breaking"),
            transport: transport,
            logger: Logger(label: "t"),
            // A backoff that lasts until it is cancelled: a wait for a stream that never yields.
            sleep: { _ in
                backingOff.continuation.yield()
                let (never, kept) = AsyncStream.makeStream(of: Void.self)
                for await _ in never {}
                withExtendedLifetime(kept) {}
                throw CancellationError()
            }
        )
        async let result = started(hub)
        var waits = backingOff.stream.makeAsyncIterator()
        _ = await waits.next()
        hub.cancelAll()
        guard case .failure(let error) = await result else {
            Issue.record("a cancelled send succeeded")
            return
        }
        #expect(error.reason == .cancelled && error.owner == .nobody && error.attempts == 1)
        // A send started after cancelAll whose first attempt fails is not retried either.
        guard case .failure(let later) = await started(hub) else {
            Issue.record("a 503 was taken for a success")
            return
        }
        #expect(later.reason == .cancelled)
    }
}

extension HTTPRequest {
    /// The first header of this name, case-insensitively.
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}
