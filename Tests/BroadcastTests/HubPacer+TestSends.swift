import Broadcast
import Testing

/// Sends driven through a pacer on the manual clock, every one answered at once and accepted: the
/// loops the pacer's tests share.
extension HubPacer {
    /// One send a millisecond over `milliseconds`, as an unpaced pacer lets every one go.
    mutating func sendOneAMillisecond(_ milliseconds: Range<Int64>) {
        for ms in milliseconds {
            guard let epoch = take(now: .milliseconds(ms)) else {
                Issue.record("no token at \(ms) ms: \(mode)")
                return
            }
            accepted(epoch: epoch, now: .milliseconds(ms))
        }
    }

    /// Every send a token allows, each millisecond over `milliseconds`.
    mutating func sendEveryToken(_ milliseconds: Range<Int64>) {
        for ms in milliseconds {
            while let epoch = take(now: .milliseconds(ms)) { accepted(epoch: epoch, now: .milliseconds(ms)) }
        }
    }

    /// A send at `ms` throttled, answered at once with a `Retry-After` of a second.
    mutating func throttleOne(at ms: Int64) {
        guard let epoch = take(now: .milliseconds(ms)) else {
            Issue.record("no token at \(ms) ms: \(mode)")
            return
        }
        throttled(epoch: epoch, retryAfter: .seconds(1), now: .milliseconds(ms))
    }
}
