import Foundation
import Logging
import Synchronization
import TextFormats

/// Sends notifications to one hub and manages its registrations and installations.
///
/// Every request goes through `perform`, which adds the cached SAS token, classifies the answer
/// and retries as `RetryPolicy` says; a 401 is retried once with a freshly minted token.
public final class NotificationHubClient: Sendable {
    public let configuration: NotificationHubConfiguration
    public let tokens: TokenProvider
    private let transport: any HTTPTransport
    let logger: Logger
    private let sleep: @Sendable (Duration) async throws -> Void
    let random: @Sendable () -> Double
    let clock: @Sendable () -> Double
    let attemptFailed: @Sendable (FailureReason, _ status: Int?) -> Void
    // Built once: every send goes to one of these.
    let messagesURL: String
    let scheduledURL: String
    /// The hub's resource URI, the SAS token's scope (a concatenation per send otherwise).
    let resourceURI: String
    private let retries = Mutex(RetryTasks())

    /// `sleep`, `random` (uniform in [0, 1)) and `clock` (epoch seconds) are injectable for tests;
    /// `attemptFailed` hears every attempt that will be retried, with its HTTP status (nil: no answer);
    /// the pipeline listens, to slow down and to notice a hub that stopped answering.
    public init(
        configuration: NotificationHubConfiguration,
        transport: any HTTPTransport,
        logger: Logger,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 },
        attemptFailed: @escaping @Sendable (FailureReason, _ status: Int?) -> Void = { _, _ in }
    ) {
        self.attemptFailed = attemptFailed
        self.configuration = configuration
        self.transport = transport
        self.logger = logger
        self.sleep = sleep
        self.random = random
        self.clock = clock
        messagesURL = configuration.url("messages/")
        scheduledURL = configuration.url("schedulednotifications/")
        resourceURI = configuration.resourceURI
        tokens = TokenProvider(
            connection: configuration.connection,
            configuration: configuration.tokens,
            now: { Int64(clock()) }
        )
    }

    /// Every response header a send reads (`SendResult`'s, and `Retry-After` for its retries),
    /// lower-case: a transport may keep only these (`TransportConfiguration.keptResponseHeaders`).
    public static let sendResponseHeaders: Set<String> = ["location", "trackingid", "retry-after"]

    // MARK: Sends

    /// A template send: `properties` fill the devices' `$(name)` placeholders; `tagExpression` is the audience.
    /// `deadline` (epoch seconds): no attempt starts at or after it, and no retry waits past it
    /// (the send fails as `stale` instead).
    public func sendTemplate(
        properties: [(String, String)],
        tagExpression: String,
        deadline: Double? = nil
    ) async throws(SendFailure) -> SendResult {
        try await send(.template(properties), tagExpression: tagExpression, deadline: deadline)
    }

    /// A template's properties or a platform's own payload, to the devices `tagExpression` selects
    /// (every device of the format when nil). A native payload is sent as it is: lint it first
    /// (`NativeNotification.violation`). `deadline` as for `sendTemplate`. With `scheduledAt`
    /// (epoch seconds, at most 7 days ahead) the hub keeps it and sends it then (Standard tier):
    /// the result's `scheduledID` cancels it (`cancelScheduled`).
    public func send(
        _ notification: HubNotification,
        tagExpression: String?,
        deadline: Double? = nil,
        scheduledAt: Double? = nil
    ) async throws(SendFailure) -> SendResult {
        if let tagExpression { try validate(tagExpression) }
        let request = sendRequest(notification, tagExpression: tagExpression)
        return try await accepted(perform(request, deadline: deadline, scheduledAt: scheduledAt))
    }

    /// Cancels a scheduled notification (`DELETE /{hub}/schedulednotifications/{id}`); an id the
    /// hub does not know (never scheduled, already sent or cancelled) fails as `not-found` (404).
    public func cancelScheduled(id: String) async throws(SendFailure) {
        _ = try await perform(request(.delete, "schedulednotifications/\(PercentEncoding.encode(id))"))
    }

    /// A request to `path` under the hub, with the client's timeout: every call but a send's.
    func request(
        _ method: HTTPRequest.Method,
        _ path: String,
        query: String = "",
        headers: [HTTPHeader] = [],
        body: [UInt8] = []
    ) -> HTTPRequest {
        HTTPRequest(
            method: method,
            url: configuration.url(path, query: query),
            headers: headers,
            body: body,
            timeout: configuration.requestTimeout
        )
    }

    /// A scheduled send less than this far (seconds) from its time goes now: the hub refuses a
    /// time it reads as past.
    public static let scheduleLead = 1.0

    /// `ServiceBusNotification-ScheduleTime`: UTC with milliseconds and `Z`, as the JS SDK writes
    /// it (the .NET SDK's whole seconds would send a notification up to a second early).
    public static func scheduleTime(_ epochSeconds: Double) -> String {
        CivilDate.rfc3339(epochSeconds: epochSeconds, milliseconds: true)
    }

    /// The JSON object of a template send's properties, written directly (no general-purpose encoder).
    public static func templateBody(_ properties: [(String, String)]) -> [UInt8] {
        var body = JSONWriter(reservingCapacity: 256)
        body.beginObject()
        for (name, value) in properties { body.member(name, value) }
        body.endObject()
        return body.bytes
    }

    /// A direct send to one device handle, bypassing tags.
    public func sendDirect(
        format: String,
        payload: [UInt8],
        deviceHandle: String,
        headers: [HTTPHeader] = []
    ) async throws(SendFailure) -> SendResult {
        let direct = request(
            .post,
            "messages/",
            query: "direct",
            headers: [
                HTTPHeader("ServiceBusNotification-Format", format),
                HTTPHeader("ServiceBusNotification-DeviceHandle", deviceHandle),
                HTTPHeader("Content-Type", "application/json;charset=utf-8"),
            ] + headers,
            body: payload
        )
        return try await accepted(perform(direct))
    }

    /// A send to `messages/`; each attempt of a scheduled one goes to `schedulednotifications/`
    /// with its time until that time comes (`RequestAttempts.prepare`).
    private func sendRequest(_ notification: HubNotification, tagExpression: String?) -> HTTPRequest {
        let body: [UInt8]
        let contentType: String
        var platformHeaders: [HTTPHeader] = []
        switch notification {
        case .template(let properties):
            body = Self.templateBody(properties)
            contentType = "application/json;charset=utf-8"
        case .native(let native):
            body = native.payload
            contentType = native.contentType
            platformHeaders = native.headers
        }
        var headers: [HTTPHeader] = []
        // Room for the token and the API version, so that a send's headers are one allocation.
        headers.reserveCapacity(5 + platformHeaders.count)
        headers.append(HTTPHeader("Content-Type", contentType))
        headers.append(HTTPHeader("ServiceBusNotification-Format", notification.format))
        if let tagExpression { headers.append(HTTPHeader("ServiceBusNotification-Tags", tagExpression)) }
        headers += platformHeaders
        return HTTPRequest(
            method: .post,
            url: messagesURL,
            headers: headers,
            body: body,
            timeout: configuration.requestTimeout
        )
    }

    private func accepted(_ outcome: (HTTPResponse, attempts: Int, throttled: Int)) -> SendResult {
        let (response, attempts, throttled) = outcome
        return SendResult(
            status: response.status,
            location: response.header(lowercased: "location"),
            trackingID: response.header(lowercased: "trackingid"),
            attempts: attempts,
            throttledAttempts: throttled,
            latency: response.elapsed
        )
    }

    /// `…/schedulednotifications/<id>?api-version=…` → `<id>`, as it is (ids hold `_` and `-`).
    public static func scheduledID(fromLocation location: String) -> String? {
        segment(after: "/schedulednotifications/", in: location)
    }

    /// `…/messages/<id>?api-version=…` → `<id>`.
    public static func notificationID(fromLocation location: String) -> String? {
        segment(after: "/messages/", in: location)
    }

    private static func segment(after collection: String, in location: String) -> String? {
        let path = location.split(separator: "?", maxSplits: 1).first ?? ""
        guard let range = path.range(of: collection) else { return nil }
        let id = path[range.upperBound...].split(separator: "/").first.map(String.init)
        return id?.isEmpty == false ? id : nil
    }

    private func validate(_ tagExpression: String) throws(SendFailure) {
        // One tag alone (a category: most sends) is a valid expression: checked without the parser.
        if TagSyntax.isTag(tagExpression) { return }
        do {
            _ = try TagExpression(parsing: tagExpression)
        } catch {
            throw SendFailure(
                reason: .invalid,
                status: nil,
                message: error.description,
                attempts: 0,
                throttledAttempts: 0,
                firstAttemptAt: 0,
                lastAttemptAt: 0
            )
        }
    }

    // MARK: The request path: token, attempt, classify, back off

    /// Sends `request` with authorization until it succeeds, the policy gives up or `deadline`
    /// (epoch seconds) would pass before the next attempt.
    func perform(
        _ request: consuming HTTPRequest,
        deadline: Double? = nil,
        scheduledAt: Double? = nil
    ) async throws(SendFailure) -> (HTTPResponse, attempts: Int, throttled: Int) {
        var attempts = RequestAttempts(request, client: self, deadline: deadline, scheduledAt: scheduledAt)
        return try await perform(&attempts)
    }

    /// Goes on with `attempts` from where they are: the whole request in `perform`, the retries of
    /// a send that `startTemplate` began.
    private func perform(
        _ attempts: inout RequestAttempts
    ) async throws(SendFailure) -> (HTTPResponse, attempts: Int, throttled: Int) {
        while true {
            try attempts.prepare(self)
            let result: Result<HTTPResponse, TransportError>
            do {
                result = .success(try await transport.send(attempts.request))
            } catch {
                result = .failure(error)
            }
            switch try attempts.judge(result, self) {
            case .accepted(let response): return (response, attempts.count, attempts.throttled)
            case .again: continue
            case .after(let delay): try await backOff(delay, attempts)
            }
        }
    }

    /// Waits out a retry's backoff; cancelled, the send ends as `cancelled`.
    private func backOff(_ delay: Duration, _ attempts: RequestAttempts) async throws(SendFailure) {
        do {
            try await sleep(delay)
        } catch {
            throw attempts.failure(.cancelled, "cancelled while backing off", self)
        }
    }

    /// A send as `send` makes it, started without a task: `completion` runs once, on the
    /// transport's thread when the first attempt settles it (the usual case), else after the
    /// retries, which go on in a task of their own. `cancelAll` ends them all.
    public func start(
        _ notification: HubNotification,
        tagExpression: String,
        deadline: Double? = nil,
        scheduledAt: Double? = nil,
        completion: @escaping @Sendable (Result<SendResult, SendFailure>) -> Void
    ) {
        var attempts: RequestAttempts
        do throws(SendFailure) {
            try validate(tagExpression)
            // Built into the attempts, not kept beside them: the headers are then appended in
            // place, where a second owner would have them copied.
            attempts = RequestAttempts(
                sendRequest(notification, tagExpression: tagExpression),
                client: self,
                deadline: deadline,
                scheduledAt: scheduledAt
            )
            try attempts.prepare(self)
        } catch {
            return completion(.failure(error))
        }
        transport.start(attempts.request) { [self, attempts] result in
            var attempts = attempts
            do throws(SendFailure) {
                switch try attempts.judge(result, self) {
                case .accepted(let response):
                    completion(.success(accepted((response, attempts.count, attempts.throttled))))
                case .again:
                    retryInTask(attempts, after: nil, completion: completion)
                case .after(let delay):
                    retryInTask(attempts, after: delay, completion: completion)
                }
            } catch {
                completion(.failure(error))
            }
        }
    }

    /// `start` for a template send.
    public func startTemplate(
        properties: [(String, String)],
        tagExpression: String,
        deadline: Double? = nil,
        completion: @escaping @Sendable (Result<SendResult, SendFailure>) -> Void
    ) {
        start(.template(properties), tagExpression: tagExpression, deadline: deadline, completion: completion)
    }

    /// For shutdown: ends every send `startTemplate` began and has not finished as `cancelled`,
    /// and every retry one of them would start from now on.
    public func cancelAll() {
        let tasks = retries.withLock { r in
            r.cancelled = true
            return Array(r.tasks.values)
        }
        for task in tasks { task.cancel() }
        transport.cancelAll()
    }

    private func retryInTask(
        _ attempts: RequestAttempts,
        after delay: Duration?,
        completion: @escaping @Sendable (Result<SendResult, SendFailure>) -> Void
    ) {
        // Registered under the lock it removes itself under: a retry that ends at once cannot
        // leave its entry behind.
        let registered = retries.withLock { r -> Bool in
            guard !r.cancelled else { return false }
            r.nextID += 1
            let id = r.nextID
            r.tasks[id] = Task { [self] in
                defer { _ = retries.withLock { $0.tasks.removeValue(forKey: id) } }
                var attempts = attempts
                do throws(SendFailure) {
                    if let delay { try await backOff(delay, attempts) }
                    completion(.success(accepted(try await perform(&attempts))))
                } catch {
                    completion(.failure(error))
                }
            }
            return true
        }
        if !registered {
            completion(.failure(attempts.failure(.cancelled, "cancelled while backing off", self)))
        }
    }

    /// The retries of started sends that went on in tasks, so that `cancelAll` reaches them.
    struct RetryTasks {
        var nextID: UInt64 = 0
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var cancelled = false
    }

    /// What one request has been through, attempt after attempt; `judge` decides what comes next
    /// from an attempt's result. A value: the async loop keeps it across awaits, a started send
    /// carries it into the transport's completion.
    struct RequestAttempts: Sendable {
        var request: HTTPRequest
        /// The caller's headers; the token and the API version follow them on every attempt.
        var callerHeaders: Int
        let deadline: Double?
        /// A scheduled send's time, until it comes.
        var scheduledAt: Double?
        let resource: String
        var token: SASToken
        var refreshed = false
        var count = 0
        var throttled = 0
        let firstAttemptAt: Double
        var status: Int?
        var message = ""

        /// What to do after an attempt.
        enum Next {
            case accepted(HTTPResponse)
            /// At once (a fresh token).
            case again
            case after(Duration)
        }

        init(
            _ request: consuming HTTPRequest,
            client: NotificationHubClient,
            deadline: Double?,
            scheduledAt: Double? = nil
        ) {
            self.request = request
            callerHeaders = self.request.headers.count
            self.deadline = deadline
            self.scheduledAt = scheduledAt
            resource = client.resourceURI
            token = client.tokens.token(for: resource)
            firstAttemptAt = client.clock()
        }

        /// Readies the next attempt: its headers, or the send's end if its deadline came.
        mutating func prepare(_ client: NotificationHubClient) throws(SendFailure) {
            if let deadline, (count == 0 ? firstAttemptAt : client.clock()) >= deadline {
                throw failure(
                    .stale,
                    count == 0
                        ? "its deadline passed before the first attempt"
                        : "its deadline passed before attempt \(count + 1); the last one: \(message)",
                    client
                )
            }
            count += 1
            request.headers.removeSubrange(callerHeaders...)
            // A scheduled send goes to the hub's schedule until its time comes, then (it waited for a
            // held hub, a backoff) to `messages/` as any other.
            if let scheduledAt {
                if (count == 1 ? firstAttemptAt : client.clock()) < scheduledAt - scheduleLead {
                    request.url = client.scheduledURL
                    request.headers.append(
                        HTTPHeader(
                            "ServiceBusNotification-ScheduleTime",
                            NotificationHubClient.scheduleTime(scheduledAt)
                        )
                    )
                } else {
                    request.url = client.messagesURL
                    self.scheduledAt = nil
                }
            }
            request.headers.append(HTTPHeader("Authorization", token.header))
            request.headers.append(HTTPHeader("x-ms-version", client.configuration.apiVersion))
            status = nil
        }

        /// Classifies the attempt's result as Notification Hubs' documentation says, and says
        /// what comes next; throws the send's failure when there is no next.
        mutating func judge(
            _ result: Result<HTTPResponse, TransportError>,
            _ client: NotificationHubClient
        ) throws(SendFailure) -> Next {
            let outcome: SendOutcome
            var retryAfter: Duration?
            switch result {
            case .success(let response):
                status = response.status
                let retryAfterText = response.header(lowercased: "retry-after")
                outcome = SendOutcome.classify(status: response.status, retryAfter: retryAfterText, body: response.body)
                if outcome == .success { return .accepted(response) }
                retryAfter = retryAfterText.flatMap { RetryAfter.parse($0, nowEpochSeconds: client.clock()) }
                message = NotificationHubClient.errorDetail(response.body)
            case .failure(let error):
                message = error.description
                switch error.kind {
                case .cancelled: throw failure(.cancelled, message, client)
                case .shutDown: throw failure(.shutDown, message, client)
                case .tls: throw failure(.tls, message, client)
                case .timeout: outcome = .retry(.timeout)
                default: outcome = .retry(.transport)
                }
            }
            let policy = client.configuration.retry
            switch outcome {
            case .success:
                preconditionFailure("handled above")
            case .refreshTokenAndRetry:
                guard !refreshed else { throw failure(.unauthorized, message, client) }
                refreshed = true
                token = client.tokens.refresh(for: resource, rejected: token)
                return .again
            case .final(let reason):
                throw failure(reason, message, client)
            case .retry(let reason):
                if reason == .throttled {
                    throttled += 1
                    guard policy.retriesThrottling else {
                        throw failure(
                            reason,
                            message,
                            client,
                            retryAfter: retryAfter.map { min($0, policy.maxRetryAfter) }
                        )
                    }
                }
                // Heard per attempt, so that the caller notices a hub that stopped answering while retries are pending.
                client.attemptFailed(reason, status)
                guard count < policy.maxAttempts else { throw failure(reason, message, client) }
                let delay = policy.delay(after: count, retryAfter: retryAfter, unit: client.random())
                if let deadline, client.clock() + Double(delay.milliseconds) / 1000 >= deadline {
                    throw failure(
                        .stale,
                        "its deadline would pass before the next attempt; the last one: \(message)",
                        client
                    )
                }
                client.logger.debug(
                    "Retrying send",
                    metadata: [
                        "reason": "\(reason)", "status": "\(status.map(String.init) ?? "-")",
                        "attempt": "\(count)", "delayMs": "\(delay.milliseconds)",
                    ]
                )
                return .after(delay)
            }
        }

        func failure(
            _ reason: FailureReason,
            _ message: String,
            _ client: NotificationHubClient,
            retryAfter: Duration? = nil
        ) -> SendFailure {
            SendFailure(
                reason: reason,
                status: status,
                message: message,
                attempts: count,
                throttledAttempts: throttled,
                firstAttemptAt: firstAttemptAt,
                lastAttemptAt: client.clock(),
                retryAfter: retryAfter
            )
        }
    }

    /// The `<Detail>` of NH's XML error body as the service wrote it (references decoded), else the body's start.
    static func errorDetail(_ body: [UInt8]) -> String {
        let text = String(decoding: body.prefix(2048), as: UTF8.self)
        if let detail = XMLText.text(of: "Detail", in: text) { return detail }
        return text.isEmpty ? "(empty body)" : String(text.prefix(300))
    }
}
