/// Where and how to send: the hub, its API version, timeouts and the retry policy.
public struct NotificationHubConfiguration: Sendable {
    public var connection: ConnectionString
    public var hubName: String
    /// NH REST API version; the official SDKs use 2020-06.
    public var apiVersion = "2020-06"
    public var requestTimeout: Duration = .seconds(30)
    public var retry = RetryPolicy()
    public var tokens = TokenProvider.Configuration()

    public init(connection: ConnectionString, hubName: String) {
        self.connection = connection
        self.hubName = hubName
    }

    /// The SAS resource: `https://<namespace>/<hub>` (the emulator's http URL for the emulator).
    public var resourceURI: String { connection.baseURL + hubName }

    func url(_ path: String, query: String = "") -> String {
        "\(connection.baseURL)\(hubName)/\(path)?\(query.isEmpty ? "" : query + "&")api-version=\(apiVersion)"
    }
}

/// How a send went: the hub accepted it.
public struct SendResult: Sendable {
    public var status: Int
    /// The `Location` header (Standard tier), when the hub gave one.
    public var location: String?
    /// From `location`; read only where wanted (the canary's sends), not parsed for every send.
    public var notificationID: String? { location.flatMap(NotificationHubClient.notificationID(fromLocation:)) }
    /// A scheduled send's id, from `location`, to cancel it with.
    public var scheduledID: String? { location.flatMap(NotificationHubClient.scheduledID(fromLocation:)) }
    /// The hub's `TrackingId`, for support requests.
    public var trackingID: String?
    public var attempts: Int
    /// Attempts that met throttling (429 or 403 quota exceeded).
    public var throttledAttempts: Int
    /// The accepted attempt's round trip.
    public var latency: Duration
}

/// A send that did not succeed after its last attempt (or was refused before any).
public struct SendFailure: Error, Sendable, CustomStringConvertible {
    public var reason: FailureReason
    /// The last HTTP status, nil when no response came.
    public var status: Int?
    /// What the hub or the transport said, without secrets.
    public var message: String
    public var attempts: Int
    public var throttledAttempts: Int
    /// Seconds since the epoch of the first and the last attempt (0 when none was made).
    public var firstAttemptAt: Double
    public var lastAttemptAt: Double
    /// The hub's `Retry-After` on the last attempt, if it gave one.
    public var retryAfter: Duration?

    public init(
        reason: FailureReason,
        status: Int?,
        message: String,
        attempts: Int,
        throttledAttempts: Int,
        firstAttemptAt: Double,
        lastAttemptAt: Double,
        retryAfter: Duration? = nil
    ) {
        self.retryAfter = retryAfter
        self.reason = reason
        self.status = status
        self.message = message
        self.attempts = attempts
        self.throttledAttempts = throttledAttempts
        self.firstAttemptAt = firstAttemptAt
        self.lastAttemptAt = lastAttemptAt
    }

    public var description: String {
        let statusText = status.map { "HTTP \($0)" } ?? "no response"
        return "\(reason) (\(statusText), \(attempts) attempt\(attempts == 1 ? "" : "s")): \(message)"
    }
}
