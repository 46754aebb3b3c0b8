import Broadcast
import DequeModule
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

    /// Every token each millisecond for `milliseconds` from `start`, at most `concurrency` in
    /// flight, each send accepted `roundTrip` later; `each` runs after every millisecond's sends.
    /// Returns the time after the last millisecond.
    mutating func sendAccepted(
        from start: Duration,
        milliseconds: Int,
        roundTrip: Duration = .milliseconds(5),
        concurrency: Int = 64,
        each: (inout HubPacer, Int, Duration) -> Void = { _, _, _ in }
    ) -> Duration {
        var now = start
        var inFlight: Deque<(at: Duration, epoch: Int)> = []
        for ms in 0..<milliseconds {
            while inFlight.count < concurrency, let epoch = take(now: now) {
                inFlight.append((now + roundTrip, epoch))
            }
            while let first = inFlight.first, first.at <= now {
                inFlight.removeFirst()
                accepted(epoch: first.epoch, now: first.at)
            }
            each(&self, ms, now)
            now += .milliseconds(1)
        }
        return now
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
