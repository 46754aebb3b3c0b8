import DequeModule
import Synchronization
import TestSupport
import Testing

@testable import Broadcast

/// Copies of one (item, audience) pair in flight at once: the second waits for the first, then is
/// skipped if the hub accepted it, or sent if it failed.
@Suite struct DeliveredSendsTests {
    @Test func theStateSaysWhoSendsAndWhoWaits() {
        var pairs = InFlightPairs(window: 60, capacity: 10)
        #expect(pairs.claim(1) == .send)
        #expect(pairs.claim(1) == nil, "a second copy while the first is in flight")
        #expect(pairs.claim(2) == .send, "another pair goes at once")
        #expect(pairs.finished(1, accepted: false, at: 0).isEmpty)
        #expect(pairs.claim(1) == .send, "a failed pair may be sent again")
        _ = pairs.finished(1, accepted: true, at: 0)
        #expect(pairs.claim(1) == .duplicate(.thisProcess))
        #expect(pairs.delivered.contains(1) != nil && pairs.delivered.contains(2) == nil, "marked on acceptance only")
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
        #expect(await second.value == .duplicate(.thisProcess))
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
        #expect(
            claims.filter { $0 == .send }.count == 1 && claims.filter { $0 == .duplicate(.thisProcess) }.count == 2,
            "\(claims)"
        )
    }

    @Test func pairsReadFromTheLedgerAreDuplicatesOfTheirOwnKind() {
        let now = Atomic<Double>(1_000_000)
        let sends = DeliveredSends(window: 3600, capacity: 100, clock: { now.load(ordering: .relaxed) })
        sends.remember(ledger: [(key: 1, at: 999_000), (key: 2, at: 990_000)])
        #expect(sends.tryClaim(1) == .duplicate(.ledger))
        #expect(sends.tryClaim(2) == .send, "older than the window when read: forgotten")
        sends.finished(2, accepted: true)
        #expect(sends.tryClaim(2) == .duplicate(.thisProcess))
        #expect(sends.count == 2)
    }
}

/// Accepted sends are remembered for a time and up to a number, oldest forgotten first.
@Suite struct RecentKeysTests {
    @Test func keysAreForgottenOnceOlderThanTheWindow() {
        var keys = RecentKeys(window: 10, capacity: 100)
        keys.insert(1, at: 100)
        keys.insert(2, at: 105)
        #expect(keys.contains(1) == .thisProcess && keys.contains(2) == .thisProcess)
        keys.insert(3, at: 110.5)
        #expect(keys.contains(1) == nil, "100 is more than 10 s before 110.5")
        #expect(keys.contains(2) == .thisProcess)
        keys.forget(before: 200)
        #expect(keys.count == 0)
    }

    @Test func theCapacityForgetsTheOldestFirst() {
        var keys = RecentKeys(window: 1e9, capacity: 3)
        for k in 1...5 { keys.insert(k, at: Double(k)) }
        #expect(keys.count == 3)
        #expect((1...5).map { keys.contains($0) != nil } == [false, false, true, true, true])
    }

    /// Random inserts, read-backs (older times after newer ones), expiries and evictions, with the
    /// ring full and going round many times, against the plain model it replaced: a dictionary
    /// and a queue.
    @Test(arguments: [1, 7, 1000, 1024, 3000]) func behavesAsADictionaryAndAQueue(capacity: Int) {
        var random = SeededGenerator(seed: UInt64(capacity))
        var keys = RecentKeys(window: 50, capacity: capacity)
        var model = ModelRecentKeys(window: 50, capacity: capacity)
        var now = 1_000.0
        for step in 0..<40_000 {
            now += Double.random(in: 0..<0.02, using: &random)
            // Keys from a small range repeat (duplicates); a few are huge or negative.
            let key =
                step % 97 == 0
                ? Int.random(in: Int.min...Int.max, using: &random) : Int.random(in: 0..<(capacity * 3), using: &random)
            if step % 13 == 0 {
                let at = now - Double.random(in: 0..<80, using: &random)
                keys.insert(key, at: at, origin: .ledger)
                model.insert(key, at: at, origin: .ledger)
            } else {
                keys.insert(key, at: now)
                model.insert(key, at: now)
            }
            if step % 5_000 == 4_999 {
                keys.forget(before: now - 20)
                model.forget(before: now - 20)
            }
            let probe = Int.random(in: 0..<(capacity * 3), using: &random)
            #expect(keys.contains(probe) == model.contains(probe), "step \(step), key \(probe)")
            #expect(keys.count == model.count, "step \(step)")
            if keys.count != model.count { return }
        }
        for probe in 0..<(capacity * 3) where keys.contains(probe) != model.contains(probe) {
            Issue.record(
                "key \(probe): \(String(describing: keys.contains(probe))) against \(String(describing: model.contains(probe)))"
            )
        }
    }

    /// A ring that went round before it filled (the oldest forgotten by the window) grows: its
    /// keys are laid out again from where they start, and every one is still found. Keys at the
    /// ends of Int's range, 0, and keys alike but in their top bits are among them.
    @Test func aRingThatWentRoundGrowsWithEveryKeyInPlace() {
        var keys = RecentKeys(window: 1e9, capacity: 5_000)
        var model = ModelRecentKeys(window: 1e9, capacity: 5_000)
        let edges = [0, 1, -1, Int.min, Int.max, Int.min + 1, Int.max - 1, 1 << 62, (1 << 62) + 1]
        var inserted: [Int] = []
        func insert(_ key: Int, at: Double) {
            keys.insert(key, at: at)
            model.insert(key, at: at)
            inserted.append(key)
        }
        for i in 0..<600 { insert(i * 7_919, at: Double(i)) }
        // The first 500 go: the ring starts at 500, with 524 free places after its 100 keys.
        keys.forget(before: 500)
        model.forget(before: 500)
        #expect(keys.count == 100)
        // 1,000 more: the ring goes round past its end, fills its 1,024 places and grows.
        for (j, key) in edges.enumerated() { insert(key, at: 600 + Double(j)) }
        for i in 0..<(1_000 - edges.count) { insert((i + 1_000) * 7_919 + 3, at: 700 + Double(i)) }
        #expect(keys.count == model.count)
        for key in inserted + edges + [42, Int.min + 2, 1 << 61] where keys.contains(key) != model.contains(key) {
            Issue.record(
                "key \(key): \(String(describing: keys.contains(key))) against \(String(describing: model.contains(key)))"
            )
        }
        #expect(edges.allSatisfy { keys.contains($0) == .thisProcess })
        // Laid out in their order: the window forgets the oldest, the first 100 and the edges.
        keys.forget(before: 650)
        model.forget(before: 650)
        #expect(keys.count == model.count)
        for key in inserted where keys.contains(key) != model.contains(key) {
            Issue.record("after the window, key \(key): \(String(describing: keys.contains(key)))")
        }
    }

    @Test func aKeyKeepsItsFirstOrigin() {
        var keys = RecentKeys(window: 100, capacity: 10)
        keys.insert(7, at: 1, origin: .ledger)
        keys.insert(7, at: 2)
        #expect(keys.contains(7) == .ledger)
        #expect(keys.count == 1)
    }
}

/// The dictionary and the queue `RecentKeys` was, as its behaviour's reference.
private struct ModelRecentKeys {
    let window: Double
    let capacity: Int
    var order: Deque<(key: Int, at: Int32)> = []
    var members: [Int: RecentKeys.Origin] = [:]
    var epoch: Double?

    init(window: Double, capacity: Int) {
        self.window = window
        self.capacity = capacity
    }

    var count: Int { members.count }
    func contains(_ key: Int) -> RecentKeys.Origin? { members[key] }

    mutating func insert(_ key: Int, at: Double, origin: RecentKeys.Origin = .thisProcess) {
        let epoch = self.epoch ?? at
        self.epoch = epoch
        forget(before: at - window)
        guard members[key] == nil else { return }
        if members.count >= capacity, let oldest = order.popFirst() { members[oldest.key] = nil }
        members[key] = origin
        order.append((key, Int32(clamping: Int64((at - epoch).rounded(.down)))))
    }

    mutating func forget(before cutoff: Double) {
        guard let epoch else { return }
        while let first = order.first, epoch + Double(first.at) < cutoff {
            order.removeFirst()
            members[first.key] = nil
        }
    }
}
