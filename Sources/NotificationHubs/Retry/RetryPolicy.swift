import TextFormats

/// Exponential backoff with full jitter, honouring `Retry-After`.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int = 5
    public var baseDelay: Duration = .seconds(1)
    public var maxDelay: Duration = .seconds(60)
    /// A server's `Retry-After` is obeyed up to this long.
    public var maxRetryAfter: Duration = .seconds(300)
    /// False: a throttled attempt ends the send at once (reason `throttled`, with the hub's
    /// `Retry-After`), for a caller that paces every send to the hub itself. One request sleeping
    /// through its own `Retry-After` while the others go on is how a quota is never met.
    public var retriesThrottling = true

    public init(maxAttempts: Int = 5, baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(60)) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// The wait before attempt `attempt + 1`, after attempt `attempt` (1-based) failed.
    ///
    /// `unit` is a uniform random number in [0, 1): full jitter draws the wait from
    /// [0, min(maxDelay, baseDelay × 2^(attempt-1))). A `Retry-After` replaces the draw.
    public func delay(after attempt: Int, retryAfter: Duration?, unit: Double) -> Duration {
        if let retryAfter { return min(retryAfter, maxRetryAfter) }
        let exponent = min(max(attempt - 1, 0), 30)
        let ceiling = min(maxDelay, baseDelay * (1 << exponent))
        return ceiling * min(max(unit, 0), 1)
    }
}

/// Parses `Retry-After` in both of HTTP's forms: delay-seconds and an HTTP-date.
public enum RetryAfter {
    public static func parse(_ value: String, nowEpochSeconds: Double) -> Duration? {
        let trimmed = value.trimmingWhitespace()
        if let seconds = Int(trimmed) { return seconds >= 0 ? .seconds(seconds) : nil }
        guard let date = httpDate(trimmed) else { return nil }
        return .milliseconds(max(0, Int64((date - nowEpochSeconds) * 1000)))
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`, as seconds since the epoch.
    static func httpDate(_ s: String) -> Double? {
        let parts = s.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", let day = Int(parts[1]),
            let month = months.firstIndex(of: String(parts[2])),
            let year = Int(parts[3])
        else { return nil }
        let time = parts[4].split(separator: ":").compactMap { Int($0) }
        guard time.count == 3, (1...31).contains(day), time[0] < 24, time[1] < 60, time[2] < 61 else { return nil }
        let days = CivilDate.days(year: year, month: month + 1, day: day)
        return Double(days * 86_400 + time[0] * 3600 + time[1] * 60 + time[2])
    }
}
