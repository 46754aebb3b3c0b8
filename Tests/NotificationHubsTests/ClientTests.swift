import Foundation
import Logging
import News
import Synchronization
import TestSupport
import Testing

@testable import NotificationHubs

/// The client and its libcurl transport against a scripted HTTP server on 127.0.0.1.
@Suite struct ClientTests {
    static let logger = Logger(label: "hubcast.tests")
    static let key = "Zm9yLXRlc3RzLW9ubHk="

    func client(
        _ server: ScriptedHTTPServer,
        retry: RetryPolicy = RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5)),
        timeout: Duration = .seconds(10),
        transport: CurlTransport? = nil,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) throws -> NotificationHubClient {
        let connection = try ConnectionString(
            parsing:
                "Endpoint=sb://127.0.0.1:\(server.port)/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=\(Self.key);UseDevelopmentEmulator=true"
        )
        var config = NotificationHubConfiguration(connection: connection, hubName: "breaking")
        config.retry = retry
        config.requestTimeout = timeout
        return NotificationHubClient(
            configuration: config,
            transport: transport ?? CurlTransport(logger: Self.logger),
            logger: Self.logger,
            sleep: sleep,
            clock: clock
        )
    }

    /// The failure a send ended in; nil when it succeeded.
    func failure(_ send: () async throws(SendFailure) -> SendResult) async -> SendFailure? {
        do {
            _ = try await send()
            return nil
        } catch {
            return error
        }
    }

    static let created = ScriptedHTTPServer.Response(
        status: 201,
        headers: [
            ("Location", "https://x.servicebus.windows.net/breaking/messages/5281793523598416?api-version=2020-06"),
            ("TrackingId", "b8d2e5a8-track"),
        ]
    )

    @Test(arguments: Categories.seedNames)
    func templateSendIsExactlyWhatTheSeedsSend(category: String) async throws {
        let server = try ScriptedHTTPServer { _, _ in Self.created }
        let hub = try client(server)
        let result = try await hub.sendTemplate(
            properties: [("messageParam", "Breaking \(category) News : Quake \"hits\"")],
            tagExpression: category
        )
        #expect(result.status == 201)
        #expect(result.notificationID == "5281793523598416")
        #expect(result.trackingID == "b8d2e5a8-track")
        #expect(result.attempts == 1)

        let request = try #require(server.requests.first)
        #expect(request.requestLine == "POST /breaking/messages/?api-version=2020-06 HTTP/1.1")
        #expect(request.header("Content-Type") == "application/json;charset=utf-8")
        #expect(request.header("ServiceBusNotification-Format") == "template")
        #expect(request.header("ServiceBusNotification-Tags") == category)
        #expect(request.header("x-ms-version") == "2020-06")
        #expect(request.header("Expect") == nil)
        #expect(
            String(decoding: request.body, as: UTF8.self)
                == #"{"messageParam":"Breaking \#(category) News : Quake \"hits\""}"#
        )
        let auth = try #require(request.header("Authorization").flatMap(SASToken.parse))
        #expect(auth.resource == "http%3a%2f%2f127.0.0.1%3a\(server.port)%2fbreaking")
        #expect(auth.keyName == "DefaultFullSharedAccessSignature")
        #expect(auth.isSigned(by: Self.key))
    }

    @Test(arguments: [1, 2])
    func thousandSequentialSendsReuseOneConnectionPerEventLoop(loops: Int) async throws {
        let server = try ScriptedHTTPServer { _, _ in Self.created }
        var configuration = TransportConfiguration()
        configuration.eventLoops = loops
        let transport = CurlTransport(configuration: configuration, logger: Self.logger)
        let hub = try client(server, transport: transport)
        for i in 0..<1000 {
            _ = try await hub.sendTemplate(properties: [("messageParam", "n\(i)")], tagExpression: "World")
        }
        #expect(server.requests.count == 1000)
        #expect(server.connections == loops)
        #expect(transport.connectionsOpened == loops)
        #expect(hub.tokens.mintCount == 1)
    }

    @Test func twoHundredConcurrentSendsComplete() async throws {
        let server = try ScriptedHTTPServer { _, _ in .init(status: 201, delay: .milliseconds(20)) }
        let hub = try client(server)
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<200 {
                group.addTask {
                    try await hub.sendTemplate(properties: [("messageParam", "\(i)")], tagExpression: "World").status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 200 && statuses.allSatisfy { $0 == 201 })
        #expect(Set(server.requests.map { String(decoding: $0.body, as: UTF8.self) }).count == 200)
    }

    @Test func timeoutFires() async throws {
        // The server would answer after ten minutes: an end before that is the 300 ms timeout. The
        // guard is wide: at the start of the run, while other suites start their servers, a 2-core
        // machine has been seen to take 18 s to resume the task (every quick test then "took" 18 s).
        let server = try ScriptedHTTPServer { _, _ in .init(status: 201, delay: .seconds(600)) }
        let transport = CurlTransport(logger: Self.logger)
        let start = ContinuousClock.now
        do {
            _ = try await transport.send(
                HTTPRequest(method: .post, url: server.baseURL + "x", body: [1], timeout: .milliseconds(300))
            )
            Issue.record("no timeout")
        } catch {
            #expect(error.kind == .timeout)
        }
        #expect(ContinuousClock.now - start < .seconds(120))
    }

    @Test func cancellingTheTaskAbortsTheTransfer() async throws {
        // The server would answer after two minutes: a result before that can only be the abort.
        let server = try ScriptedHTTPServer { _, _ in .init(status: 201, delay: .seconds(120)) }
        let transport = CurlTransport(logger: Self.logger)
        let task = Task {
            try await transport.send(HTTPRequest(method: .get, url: server.baseURL + "slow", timeout: .seconds(300)))
        }
        while server.requests.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        let start = ContinuousClock.now
        task.cancel()
        let result = await task.result
        #expect(
            ContinuousClock.now - start < .seconds(60),
            "only a guard: a loaded machine may take seconds to resume the task"
        )
        #expect(throws: TransportError.self) { try result.get() }
        if case .failure(let error as TransportError) = result { #expect(error.kind == .cancelled) }
    }

    /// Submits to `loop` and waits for the answer.
    func perform(
        _ loop: CurlEventLoop,
        _ request: HTTPRequest,
        cancel: CancelRequest? = nil
    ) async -> Result<HTTPResponse, TransportError> {
        await withCheckedContinuation { continuation in
            loop.submit(Submission(request: request, cancel: cancel) { continuation.resume(returning: $0) })
        }
    }

    @Test func aRequestCancelledBeforeTheLoopTakesItNeverReachesTheServer() async throws {
        // The cancel reaches the loop in an earlier pass than the request: the answer to the
        // request in between proves that pass is over. Only the token's flag can stop it then.
        let server = try ScriptedHTTPServer { _, _ in .init(status: 201) }
        let loop = CurlEventLoop(configuration: TransportConfiguration(), logger: Self.logger)
        defer { loop.stop() }
        let token = CancelRequest()
        loop.cancel(token)
        let between = await perform(loop, HTTPRequest(method: .get, url: server.baseURL + "between"))
        #expect((try? between.get().status) == 201)
        let cancelled = await perform(loop, HTTPRequest(method: .get, url: server.baseURL + "cancelled"), cancel: token)
        if case .failure(let error) = cancelled {
            #expect(error.kind == .cancelled)
        } else {
            Issue.record("expected a cancelled transfer, got \(cancelled)")
        }
        let after = await perform(loop, HTTPRequest(method: .get, url: server.baseURL + "after"))
        #expect((try? after.get().status) == 201)
        #expect(server.requests.map(\.requestLine).filter { $0.contains("/cancelled") }.isEmpty)
        #expect(server.requests.count == 2)
    }

    @Test func cancelAllEndsTheRequestsQueuedBeforeItAndNotThoseAfter() async throws {
        // The loop thread is held inside a completion while A and B are queued, cancelAll is
        // called and C is queued: all three wait in the inbox, and only the count tells them apart.
        let server = try ScriptedHTTPServer { _, _ in .init(status: 201) }
        let loop = CurlEventLoop(configuration: TransportConfiguration(), logger: Self.logger)
        defer { loop.stop() }
        let gate = NSCondition()
        let held = Mutex(false)
        let released = Mutex(false)
        let (entered, entering) = AsyncStream.makeStream(of: Void.self)
        loop.submit(
            Submission(request: HTTPRequest(method: .get, url: server.baseURL + "hold"), cancel: nil) { _ in
                held.withLock { $0 = true }
                entering.yield()
                gate.lock()
                while !released.withLock({ $0 }) { gate.wait() }
                gate.unlock()
            }
        )
        var iterator = entered.makeAsyncIterator()
        _ = await iterator.next()
        let results = Mutex<[String: Result<HTTPResponse, TransportError>]>([:])
        let (done, finishing) = AsyncStream.makeStream(of: Void.self)
        func queue(_ name: String) {
            loop.submit(
                Submission(request: HTTPRequest(method: .get, url: server.baseURL + name), cancel: nil) { result in
                    results.withLock { $0[name] = result }
                    finishing.yield()
                }
            )
        }
        queue("a")
        queue("b")
        loop.cancelAll()
        queue("c")
        gate.withLock {
            released.withLock { $0 = true }
            gate.broadcast()
        }
        var ends = done.makeAsyncIterator()
        for _ in 0..<3 { _ = await ends.next() }
        let ended = results.withLock { $0 }
        for name in ["a", "b"] {
            if case .failure(let error) = ended[name] {
                #expect(error.kind == .cancelled, "\(name)")
            } else {
                Issue.record("\(name) was queued before cancelAll but ended \(String(describing: ended[name]))")
            }
        }
        #expect((try? ended["c"]?.get().status) == 201, "c was queued after cancelAll")
        #expect(server.requests.map(\.requestLine).filter { $0.contains("/a ") || $0.contains("/b ") }.isEmpty)
    }

    @Test func aReusedHandleCarriesNothingOfTheRequestBefore() async throws {
        // One loop, one request at a time: the second and third requests reuse the first's handle
        // (and its transfer).
        let server = try ScriptedHTTPServer { request, _ in
            request.requestLine.contains("/first")
                ? .init(status: 201, headers: [("X-Only-First", "1")], body: "first body")
                : .init(status: 200)
        }
        let loop = CurlEventLoop(configuration: TransportConfiguration(), logger: Self.logger)
        defer { loop.stop() }
        let first = try await perform(
            loop,
            HTTPRequest(
                method: .post,
                url: server.baseURL + "first",
                headers: [HTTPHeader("X-Request", "1")],
                body: [1, 2, 3]
            )
        ).get()
        #expect(first.status == 201)
        #expect(first.headers.contains { $0.name == "x-only-first" })
        #expect(first.body == Array("first body".utf8))
        let second = try await perform(loop, HTTPRequest(method: .delete, url: server.baseURL + "second")).get()
        #expect(second.status == 200)
        #expect(!second.headers.contains { $0.name == "x-only-first" })
        #expect(second.body.isEmpty)
        let third = try await perform(loop, HTTPRequest(method: .get, url: server.baseURL + "third")).get()
        #expect(third.status == 200)
        let requests = server.requests
        #expect(requests.map { String($0.requestLine.prefix { $0 != " " }) } == ["POST", "DELETE", "GET"])
        #expect(requests[1].body.isEmpty && requests[2].body.isEmpty)
        #expect(!requests[1].headers.contains { $0.name.lowercased() == "x-request" })
        #expect(loop.connectionsOpened == 1)
    }

    @Test func startedRequestsCompleteOnTheLoopThreadAndCancelAllEndsTheUnanswered() async throws {
        // Half the requests are answered at once, the rest after two minutes: those can only end by
        // being cancelled.
        let (slowArrived, arriving) = AsyncStream.makeStream(of: Void.self)
        let server = try ScriptedHTTPServer { request, _ in
            guard request.requestLine.contains("/slow") else { return .init(status: 201) }
            arriving.yield()
            return .init(status: 201, delay: .seconds(120))
        }
        let transport = CurlTransport(logger: Self.logger)
        let (ended, ending) = AsyncStream.makeStream(of: (String, Result<HTTPResponse, TransportError>).self)
        for i in 0..<20 {
            let path = i.isMultiple(of: 2) ? "fast" : "slow"
            transport.start(HTTPRequest(method: .get, url: server.baseURL + path, timeout: .seconds(300))) {
                ending.yield((path, $0))
            }
        }
        var results: [(String, Result<HTTPResponse, TransportError>)] = []
        var iterator = ended.makeAsyncIterator()
        while results.count < 10, let next = await iterator.next() { results.append(next) }
        #expect(results.allSatisfy { $0.0 == "fast" && (try? $0.1.get().status) == 201 })
        // Every slow request is at the server, unanswered, when they are cancelled together.
        var arrivals = slowArrived.makeAsyncIterator()
        for _ in 0..<10 { _ = await arrivals.next() }
        transport.cancelAll()
        while results.count < 20, let next = await iterator.next() { results.append(next) }
        let slow = results.dropFirst(10)
        #expect(
            slow.allSatisfy { path, result in
                guard path == "slow", case .failure(let error) = result else { return false }
                return error.kind == .cancelled
            }
        )
        // The transport goes on after cancelAll.
        let after = try await transport.send(HTTPRequest(method: .get, url: server.baseURL + "fast"))
        #expect(after.status == 201)
    }

    @Test func aTransportKeepingOnlyTheSendHeadersLosesNothingASendReads() async throws {
        let server = try ScriptedHTTPServer { _, i in
            i == 0 ? .init(status: 429, headers: [("Retry-After", "7"), ("X-Other", "dropped")]) : Self.created
        }
        var configuration = TransportConfiguration()
        configuration.keptResponseHeaders = NotificationHubClient.sendResponseHeaders
        let slept = Mutex<[Duration]>([])
        let hub = try client(
            server,
            transport: CurlTransport(configuration: configuration, logger: Self.logger),
            sleep: { d in slept.withLock { $0.append(d) } }
        )
        let result = try await hub.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
        #expect(slept.withLock { $0 } == [.seconds(7)], "Retry-After was read")
        #expect(result.notificationID == "5281793523598416" && result.trackingID == "b8d2e5a8-track")
    }

    @Test func throttled429IsRetriedAfterItsRetryAfter() async throws {
        let server = try ScriptedHTTPServer { _, i in
            i == 0 ? .init(status: 429, headers: [("Retry-After", "1")]) : Self.created
        }
        let slept = Mutex<[Duration]>([])
        let hub = try client(
            server,
            sleep: { d in
                slept.withLock { $0.append(d) }
                try await Task.sleep(for: d)
            }
        )
        let start = ContinuousClock.now
        let result = try await hub.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
        #expect(ContinuousClock.now - start >= .seconds(1))
        #expect(slept.withLock { $0 } == [.seconds(1)])
        #expect(result.attempts == 2 && result.throttledAttempts == 1)
    }

    @Test func quotaExceeded403IsRetriedButOther403IsFinal() async throws {
        let quota = try ScriptedHTTPServer { _, i in
            i == 0
                ? .init(
                    status: 403,
                    body: "<Error><Code>403</Code><Detail>QuotaExceeded: too many sends</Detail></Error>"
                ) : Self.created
        }
        let retried = try await client(quota).sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
        #expect(retried.attempts == 2 && retried.throttledAttempts == 1)

        let denied = try ScriptedHTTPServer { _, _ in
            .init(
                status: 403,
                body: "<Error><Code>403</Code><Detail>The token does not have the Send claim.</Detail></Error>"
            )
        }
        let deniedHub = try client(denied)
        let error = await failure { () throws(SendFailure) in
            try await deniedHub.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
        }
        #expect(error?.reason == .forbidden && error?.attempts == 1 && error?.status == 403)
        #expect(error?.message == "The token does not have the Send claim.")
        #expect(denied.requests.count == 1)
    }

    @Test func twoServerErrorsThenSuccessTakesThreeAttempts() async throws {
        let server = try ScriptedHTTPServer { _, i in i < 2 ? .init(status: 503) : Self.created }
        let result = try await client(server).sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
        #expect(result.attempts == 3 && result.status == 201)
    }

    @Test func badRequestIsNotRetriedAndExhaustionReportsTheLastStatus() async throws {
        let bad = try ScriptedHTTPServer { _, _ in
            .init(status: 400, body: "<Error><Code>400</Code><Detail>Bad tags</Detail></Error>")
        }
        let badHub = try client(bad)
        let badError = await failure { () throws(SendFailure) in
            try await badHub.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
        }
        #expect(badError?.reason == .badRequest && badError?.attempts == 1)
        #expect(bad.requests.count == 1)

        let down = try ScriptedHTTPServer { _, _ in .init(status: 503) }
        let downHub = try client(
            down,
            retry: RetryPolicy(maxAttempts: 4, baseDelay: .milliseconds(1), maxDelay: .milliseconds(2))
        )
        let downError = await failure { () throws(SendFailure) in
            try await downHub.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
        }
        #expect(downError?.reason == .serverError && downError?.attempts == 4 && downError?.status == 503)
        #expect(down.requests.count == 4)
    }

    @Test func retriesStopBeforeTheDeadlineRatherThanAfter() async throws {
        // A hub down with 503, backoffs drawn below 4 s, on a clock that the sleeps advance; attempts
        // enough that only the deadline can end the send.
        let down = try ScriptedHTTPServer { _, _ in
            .init(status: 503, body: "<Error><Code>503</Code><Detail>Down</Detail></Error>")
        }
        let now = Mutex(1_000.0)
        let hub = try client(
            down,
            retry: RetryPolicy(maxAttempts: 10_000, baseDelay: .seconds(4), maxDelay: .seconds(4)),
            sleep: { d in now.withLock { $0 += Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
            },
            clock: { now.withLock { $0 } }
        )
        let error = await failure { () throws(SendFailure) in
            try await hub.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World", deadline: 1_006)
        }
        #expect(error?.reason == .stale, "\(String(describing: error))")
        #expect(error?.status == 503, "the last answer is kept")
        #expect(now.withLock { $0 } < 1_006, "no wait past the deadline")
        #expect(error.map { $0.attempts } == down.requests.count)
        #expect(error?.message.contains("Down") == true)
        // Past its deadline already: nothing goes out.
        let late = await failure { () throws(SendFailure) in
            try await hub.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World", deadline: 999)
        }
        #expect(late?.reason == .stale && late?.attempts == 0)
        #expect(down.requests.count == error?.attempts)
    }

    @Test func unauthorizedTriggersExactlyOneTokenRefresh() async throws {
        let server = try ScriptedHTTPServer { _, _ in
            .init(status: 401, body: "<Error><Code>401</Code><Detail>ExpiredToken</Detail></Error>")
        }
        // A clock that moves a minute per reading, so the refreshed token differs from the rejected one.
        let ticks = Mutex<Double>(1_800_000_000)
        let hub = try client(
            server,
            clock: {
                ticks.withLock {
                    $0 += 60
                    return $0
                }
            }
        )
        let error = await failure { () throws(SendFailure) in
            try await hub.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
        }
        #expect(error?.reason == .unauthorized && error?.attempts == 2)
        #expect(hub.tokens.mintCount == 2)
        #expect(server.requests.count == 2)
        #expect(server.requests[0].header("Authorization") != server.requests[1].header("Authorization"))
    }

    /// The hub's error text reaches the user as the service wrote it: `token's`, not `token&apos;s`.
    @Test func errorDetailIsDecodedAsXML() async throws {
        let server = try ScriptedHTTPServer { _, _ in
            .init(
                status: 401,
                body:
                    "<Error><Code>401</Code><Detail>MalformedToken: not in the token&apos;s format &#x2014; &lt;see&gt; &amp;amp;</Detail></Error>"
            )
        }
        let hub = try client(server)
        let error = await failure { () throws(SendFailure) in
            try await hub.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
        }
        #expect(
            error?.message == "MalformedToken: not in the token's format \u{2014} <see> &amp;",
            "\(error?.message ?? "no error")"
        )
    }

    @Test func xmlReferencesDecodeInOnePassAndOddOnesStayAsWritten() {
        let cases: [(String, String)] = [
            ("token&apos;s", "token's"), ("&#39;&#x27;&#X27;", "''&#X27;"), ("&amp;lt;", "&lt;"),
            ("&lt;&gt;&quot;&amp;", "<>\"&"),
            ("&#128512;&#x1F600;", "\u{1F600}\u{1F600}"),
            ("&#xD800;&#0;&#xFFFE;&#x110000;", "&#xD800;&#0;&#xFFFE;&#x110000;"),
            ("&nbsp; & &; &#; &#x; &#12a; a&b", "&nbsp; & &; &#; &#x; &#12a; a&b"), ("&#9;&#10;&#13;", "\t\n\r"),
            ("&#99999999999999999999;", "&#99999999999999999999;"), ("no references", "no references"),
            ("&&amp;", "&&"),
        ]
        for (written, decoded) in cases {
            #expect(XMLText.unescape(written) == decoded, "\(written)")
        }
        // Whatever escape writes, unescape reads back.
        var generator = SeededGenerator(seed: 7)
        let alphabet: [Character] = ["&", "<", ">", "'", "\"", ";", "#", "x", "a", "\u{E9}", "\u{1F600}"]
        for _ in 0..<2000 {
            let text = String(
                (0..<Int.random(in: 0...20, using: &generator)).map { _ in
                    alphabet[Int.random(in: 0..<alphabet.count, using: &generator)]
                }
            )
            #expect(XMLText.unescape(XMLText.escape(text)) == text, "\(text)")
        }
        #expect(
            XMLText.text(of: "Detail", in: "<Error><Detail>a &amp; <![CDATA[&amp; raw]]> b</Detail></Error>")
                == "a & &amp; raw b"
        )
    }

    @Test func invalidTagExpressionNeverReachesTheNetwork() async throws {
        let server = try ScriptedHTTPServer { _, _ in Self.created }
        let hub = try client(server)
        let error = await failure { () throws(SendFailure) in
            try await hub.sendTemplate(properties: [("messageParam", "m")], tagExpression: "World &&& Sports")
        }
        #expect(error?.reason == .invalid && error?.attempts == 0)
        #expect(error?.message.contains("column") == true)
        #expect(server.requests.isEmpty)
    }

    @Test func droppedConnectionIsATransportErrorAndRetried() async throws {
        let server = try ScriptedHTTPServer { _, i in i == 0 ? .init(status: 0, drop: true) : Self.created }
        let result = try await client(server).sendTemplate(properties: [("messageParam", "m")], tagExpression: "World")
        #expect(result.attempts == 2)
    }
}
