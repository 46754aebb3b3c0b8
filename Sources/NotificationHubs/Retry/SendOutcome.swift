/// What a response (or a transport failure) means for the send that got it.
public enum SendOutcome: Sendable, Equatable {
    case success
    /// Worth another attempt after a backoff; `throttled` also tells the limiter to slow down.
    case retry(FailureReason)
    /// 401: retry once with a freshly minted token.
    case refreshTokenAndRetry
    /// Another attempt would fail the same way.
    case final(FailureReason)

    /// Classifies an HTTP status as NH's documentation and the official SDKs do.
    public static func classify(status: Int, retryAfter: String?, body: [UInt8]) -> SendOutcome {
        switch status {
        case 200..<300: return .success
        case 401: return .refreshTokenAndRetry
        case 403:
            // NH reports throttling as 403 "QuotaExceeded" too; without that it is a missing right.
            return retryAfter != nil || mentionsQuota(body) ? .retry(.throttled) : .final(.forbidden)
        case 429: return .retry(.throttled)
        case 408: return .retry(.timeout)
        case 500..<600: return .retry(.serverError)
        case 400: return .final(.badRequest)
        case 404: return .final(.notFound)
        case 410: return .final(.gone)
        case 413: return .final(.tooLarge)
        default: return .final(.rejected)
        }
    }

    private static let quota = Array("quota".utf8)

    private static func mentionsQuota(_ body: [UInt8]) -> Bool {
        guard body.count >= quota.count else { return false }
        let lower = body.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
        for start in 0...(lower.count - quota.count) where lower[start] == quota[0] {
            if Array(lower[start..<start + quota.count]) == quota { return true }
        }
        return false
    }
}

/// Why a send failed; the text is stable and safe as a metric label or a dead-letter `reason`.
public struct FailureReason: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    public init(_ name: String) { self.name = name }
    public var description: String { name }

    public static let throttled = FailureReason("throttled")
    public static let serverError = FailureReason("server-error")
    public static let timeout = FailureReason("timeout")
    public static let transport = FailureReason("transport")
    public static let unauthorized = FailureReason("unauthorized")
    public static let forbidden = FailureReason("forbidden")
    public static let badRequest = FailureReason("bad-request")
    public static let notFound = FailureReason("not-found")
    public static let gone = FailureReason("gone")
    public static let tooLarge = FailureReason("too-large")
    public static let rejected = FailureReason("rejected")
    public static let tls = FailureReason("tls")
    public static let invalid = FailureReason("invalid")
    /// Its deadline passed before it could go (or its next retry would start after it).
    public static let stale = FailureReason("stale")
    /// Not a verdict on the send: it was cancelled (shutdown) before it could finish.
    public static let cancelled = FailureReason("cancelled")
    public static let shutDown = FailureReason("shut-down")
}

/// Whose fault a failed send is: that decides whether it is dead-lettered, held or retried later.
public enum FailureOwner: Sendable, Equatable {
    /// Not a failure: the send was cancelled (shutdown) and will be made again after a restart.
    case nobody
    /// The hub's quota: wait and send again; never a reason to dead-letter.
    case throttling
    /// The hub or the way to it (credentials refused, a 403 that is not a quota, TLS, DNS, no
    /// answer): not the item's fault; hold the send until the hub is back.
    case hub
    /// The item (400, 404, 410, 413, an invalid expression, 5xx after every retry, its deadline
    /// passed): dead-letter it.
    case item
}

extension SendFailure {
    public var owner: FailureOwner {
        switch reason {
        case .cancelled, .shutDown: .nobody
        case .throttled: .throttling
        case .unauthorized, .forbidden, .tls, .transport, .timeout: .hub
        default: .item
        }
    }

    /// One line that says what the hub did, for logs and reports (no secrets: the message never carries one).
    public var summary: String { "\(reason) (HTTP \(status.map(String.init) ?? "-")): \(message)" }
}
