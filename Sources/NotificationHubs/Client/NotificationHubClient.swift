import Foundation
import Logging
import TextFormats

/// Sends notifications to one hub and manages its registrations and installations.
///
/// Every request goes through `perform`, which adds the cached SAS token, classifies the answer
/// and retries as `RetryPolicy` says; a 401 is retried once with a freshly minted token.
public final class NotificationHubClient: Sendable {
    public let configuration: NotificationHubConfiguration
    public let tokens: TokenProvider
    private let transport: any HTTPTransport
    private let logger: Logger
    private let sleep: @Sendable (Duration) async throws -> Void
    private let random: @Sendable () -> Double
    private let clock: @Sendable () -> Double
    private let attemptFailed: @Sendable (FailureReason, _ status: Int?) -> Void
    // Built once: every send goes to the same URL.
    private let messagesURL: String

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
        tokens = TokenProvider(
            connection: configuration.connection,
            configuration: configuration.tokens,
            now: { Int64(clock()) }
        )
    }

    // MARK: Sends

    /// A template send: `properties` fill the devices' `$(name)` placeholders; `tagExpression` is the audience.
    /// `deadline` (epoch seconds): no attempt starts at or after it, and no retry waits past it
    /// (the send fails as `stale` instead).
    public func sendTemplate(
        properties: [(String, String)],
        tagExpression: String,
        deadline: Double? = nil
    ) async throws(SendFailure) -> SendResult {
        try validate(tagExpression)
        return try await send(
            format: "template",
            body: Self.templateBody(properties),
            tagExpression: tagExpression,
            extraHeaders: [],
            deadline: deadline
        )
    }

    /// The JSON object of a template send's properties, written directly (no general-purpose encoder).
    public static func templateBody(_ properties: [(String, String)]) -> [UInt8] {
        var body = JSONWriter(reservingCapacity: 256)
        body.beginObject()
        for (name, value) in properties { body.member(name, value) }
        body.endObject()
        return body.bytes
    }

    /// A native send (`apple`, `fcmv1`, `gcm`, `windows`, …) with the platform's own payload.
    public func sendNative(
        format: String,
        payload: [UInt8],
        tagExpression: String?,
        headers: [HTTPHeader] = []
    ) async throws(SendFailure) -> SendResult {
        if let tagExpression { try validate(tagExpression) }
        return try await send(format: format, body: payload, tagExpression: tagExpression, extraHeaders: headers)
    }

    /// A direct send to one device handle, bypassing tags.
    public func sendDirect(
        format: String,
        payload: [UInt8],
        deviceHandle: String,
        headers: [HTTPHeader] = []
    ) async throws(SendFailure) -> SendResult {
        let request = HTTPRequest(
            method: .post,
            url: configuration.url("messages/", query: "direct"),
            headers: [
                HTTPHeader("ServiceBusNotification-Format", format),
                HTTPHeader("ServiceBusNotification-DeviceHandle", deviceHandle),
                HTTPHeader("Content-Type", "application/json;charset=utf-8"),
            ] + headers,
            body: payload,
            timeout: configuration.requestTimeout
        )
        return try await accepted(perform(request))
    }

    private func send(
        format: String,
        body: [UInt8],
        tagExpression: String?,
        extraHeaders: [HTTPHeader],
        deadline: Double? = nil
    ) async throws(SendFailure) -> SendResult {
        var headers: [HTTPHeader] = []
        // Room for perform's two, so that a send's headers are one allocation.
        headers.reserveCapacity(5 + extraHeaders.count)
        headers.append(HTTPHeader("Content-Type", "application/json;charset=utf-8"))
        headers.append(HTTPHeader("ServiceBusNotification-Format", format))
        if let tagExpression { headers.append(HTTPHeader("ServiceBusNotification-Tags", tagExpression)) }
        headers += extraHeaders
        let request = HTTPRequest(
            method: .post,
            url: messagesURL,
            headers: headers,
            body: body,
            timeout: configuration.requestTimeout
        )
        return try await accepted(perform(request, deadline: deadline))
    }

    private func accepted(_ outcome: (HTTPResponse, attempts: Int, throttled: Int)) -> SendResult {
        let (response, attempts, throttled) = outcome
        let location = response.header("Location")
        return SendResult(
            status: response.status,
            notificationID: location.flatMap(Self.notificationID),
            trackingID: response.header("TrackingId"),
            attempts: attempts,
            throttledAttempts: throttled,
            latency: response.elapsed
        )
    }

    /// `…/messages/<id>?api-version=…` → `<id>`.
    static func notificationID(fromLocation location: String) -> String? {
        let path = location.split(separator: "?", maxSplits: 1).first ?? ""
        guard let range = path.range(of: "/messages/") else { return nil }
        let id = path[range.upperBound...].split(separator: "/").first.map(String.init)
        return id?.isEmpty == false ? id : nil
    }

    private func validate(_ tagExpression: String) throws(SendFailure) {
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
        deadline: Double? = nil
    ) async throws(SendFailure) -> (HTTPResponse, attempts: Int, throttled: Int) {
        // Owned, so the two headers below are appended in place, not to a copy, on every attempt.
        var request = request
        let callerHeaders = request.headers.count
        let resource = configuration.resourceURI
        var token = tokens.token(for: resource)
        var refreshed = false
        var attempts = 0
        var throttled = 0
        let firstAttemptAt = clock()
        var status: Int?
        var message = ""
        while true {
            if let deadline, (attempts == 0 ? firstAttemptAt : clock()) >= deadline {
                throw failure(
                    .stale,
                    status,
                    attempts == 0
                        ? "its deadline passed before the first attempt"
                        : "its deadline passed before attempt \(attempts + 1); the last one: \(message)",
                    attempts,
                    throttled,
                    firstAttemptAt
                )
            }
            attempts += 1
            request.headers.removeSubrange(callerHeaders...)
            request.headers.append(HTTPHeader("Authorization", token.header))
            request.headers.append(HTTPHeader("x-ms-version", configuration.apiVersion))
            let outcome: SendOutcome
            status = nil
            var retryAfter: Duration?
            do {
                let response = try await transport.send(request)
                status = response.status
                let retryAfterText = response.header("Retry-After")
                outcome = SendOutcome.classify(status: response.status, retryAfter: retryAfterText, body: response.body)
                if outcome == .success { return (response, attempts, throttled) }
                retryAfter = retryAfterText.flatMap { RetryAfter.parse($0, nowEpochSeconds: clock()) }
                message = Self.errorDetail(response.body)
            } catch {
                message = error.description
                switch error.kind {
                case .cancelled, .shutDown:
                    throw failure(
                        error.kind == .cancelled ? .cancelled : .shutDown,
                        nil,
                        message,
                        attempts,
                        throttled,
                        firstAttemptAt
                    )
                case .tls:
                    throw failure(.tls, nil, message, attempts, throttled, firstAttemptAt)
                case .timeout:
                    outcome = .retry(.timeout)
                default:
                    outcome = .retry(.transport)
                }
            }
            switch outcome {
            case .success:
                preconditionFailure("handled above")
            case .refreshTokenAndRetry:
                guard !refreshed else {
                    throw failure(.unauthorized, status, message, attempts, throttled, firstAttemptAt)
                }
                refreshed = true
                token = tokens.refresh(for: resource, rejected: token)
            case .retry(let reason):
                if reason == .throttled {
                    throttled += 1
                    guard configuration.retry.retriesThrottling else {
                        throw failure(
                            reason,
                            status,
                            message,
                            attempts,
                            throttled,
                            firstAttemptAt,
                            retryAfter: retryAfter.map { min($0, configuration.retry.maxRetryAfter) }
                        )
                    }
                }
                // Heard per attempt, so that the caller notices a hub that stopped answering while retries are pending.
                attemptFailed(reason, status)
                guard attempts < configuration.retry.maxAttempts else {
                    throw failure(reason, status, message, attempts, throttled, firstAttemptAt)
                }
                let delay = configuration.retry.delay(after: attempts, retryAfter: retryAfter, unit: random())
                if let deadline, clock() + Double(delay.milliseconds) / 1000 >= deadline {
                    throw failure(
                        .stale,
                        status,
                        "its deadline would pass before the next attempt; the last one: \(message)",
                        attempts,
                        throttled,
                        firstAttemptAt
                    )
                }
                logger.debug(
                    "Retrying send",
                    metadata: [
                        "reason": "\(reason)", "status": "\(status.map(String.init) ?? "-")",
                        "attempt": "\(attempts)", "delayMs": "\(delay.milliseconds)",
                    ]
                )
                do {
                    try await sleep(delay)
                } catch {
                    throw failure(
                        .cancelled,
                        status,
                        "cancelled while backing off",
                        attempts,
                        throttled,
                        firstAttemptAt
                    )
                }
            case .final(let reason):
                throw failure(reason, status, message, attempts, throttled, firstAttemptAt)
            }
        }
    }

    private func failure(
        _ reason: FailureReason,
        _ status: Int?,
        _ message: String,
        _ attempts: Int,
        _ throttled: Int,
        _ firstAttemptAt: Double,
        retryAfter: Duration? = nil
    ) -> SendFailure {
        SendFailure(
            reason: reason,
            status: status,
            message: message,
            attempts: attempts,
            throttledAttempts: throttled,
            firstAttemptAt: firstAttemptAt,
            lastAttemptAt: clock(),
            retryAfter: retryAfter
        )
    }

    /// The `<Detail>` of NH's XML error body as the service wrote it (references decoded), else the body's start.
    static func errorDetail(_ body: [UInt8]) -> String {
        let text = String(decoding: body.prefix(2048), as: UTF8.self)
        if let detail = XMLText.text(of: "Detail", in: text) { return detail }
        return text.isEmpty ? "(empty body)" : String(text.prefix(300))
    }
}
