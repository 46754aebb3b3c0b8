import TestSupport
import Testing

@testable import Broadcast

/// Copies of one (item, audience) pair in flight at once: the second waits for the first, then is
/// skipped if the hub accepted it, or sent if it failed.
@Suite struct DeliveredSendsTests {
    @Test func theStateSaysWhoSendsAndWhoWaits() {
        var pairs = InFlightPairs(capacity: 10)
        #expect(pairs.claim(1) == .send)
        #expect(pairs.claim(1) == nil, "a second copy while the first is in flight")
        #expect(pairs.claim(2) == .send, "another pair goes at once")
        #expect(pairs.finished(1, accepted: false).isEmpty)
        #expect(pairs.claim(1) == .send, "a failed pair may be sent again")
        _ = pairs.finished(1, accepted: true)
        #expect(pairs.claim(1) == .duplicate)
        #expect(pairs.delivered.contains(1) && !pairs.delivered.contains(2), "marked on acceptance only")
    }

    @Test func aCopyWaitingOnAnAcceptedSendIsADuplicate() async throws {
        let sends = DeliveredSends(capacity: 10)
        #expect(await sends.claim(7) == .send)
        let second = Task { await sends.claim(7) }
        #expect(
            try await poll(every: .milliseconds(1), timeout: .seconds(60)) { sends.waiting(7) == 1 ? true : nil }
                == true
        )
        sends.finished(7, accepted: true)
        #expect(await second.value == .duplicate)
    }

    @Test func ofCopiesWaitingOnAFailedSendExactlyOneSends() async throws {
        let sends = DeliveredSends(capacity: 10)
        #expect(await sends.claim(7) == .send)
        let copies = (0..<3).map { _ in Task { await sends.claim(7) } }
        #expect(
            try await poll(every: .milliseconds(1), timeout: .seconds(60)) { sends.waiting(7) == 3 ? true : nil }
                == true
        )
        sends.finished(7, accepted: false)
        // One of them has the pair now; the others wait on it again, and its acceptance makes them duplicates.
        #expect(
            try await poll(every: .milliseconds(1), timeout: .seconds(60)) { sends.waiting(7) == 2 ? true : nil }
                == true
        )
        sends.finished(7, accepted: true)
        var claims: [DeliveredSends.Claim] = []
        for copy in copies { claims.append(await copy.value) }
        #expect(claims.filter { $0 == .send }.count == 1 && claims.filter { $0 == .duplicate }.count == 2, "\(claims)")
    }
}
