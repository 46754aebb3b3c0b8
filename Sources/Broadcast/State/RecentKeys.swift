import DequeModule

/// Keys of sends the hub accepted, each remembered until it is older than `window` seconds or
/// `capacity` newer ones came after it, with where it was learned: from this process, or read
/// back from the delivered-sends ledger (an earlier process, another instance, a replay).
///
/// About 16 bytes a key: the keys in a ring in the order they came (8 bytes), an open-addressing
/// index of ring positions kept at most half full (2 × 4 bytes), one bit of origin, and their
/// times as runs of one second. A million, the most it holds, peaked at 16 MiB of RSS where a
/// dictionary and a queue of (key, time) took 40 (benchmarks/README.md). Our own rather than a
/// package's: swift-collections' `OrderedSet` is the nearest (an array and an index of
/// positions), but it removes from its front in linear time, and here the oldest key goes with
/// nearly every new one.
public struct RecentKeys: Sendable {
    public enum Origin: Sendable, Equatable { case thisProcess, ledger }

    /// Consecutive keys remembered with the same second.
    private struct Run {
        /// Seconds since `epoch`: 4 bytes where a Double would take 8.
        var second: Int32
        var count: Int32
    }

    public let window: Double
    public let capacity: Int
    private var keys = KeyRing()
    private var runs: Deque<Run> = []
    /// Times are kept relative to this, the first one seen (an Int32 of seconds spans 68 years).
    private var epoch: Double?

    public init(window: Double, capacity: Int) {
        self.window = window
        // The index holds ring positions as UInt32 and a run counts in Int32.
        self.capacity = max(1, min(capacity, Int(Int32.max)))
    }

    public var count: Int { keys.count }

    public func contains(_ key: Int) -> Origin? {
        keys.position(of: key).map { keys.isFromLedger($0) ? .ledger : .thisProcess }
    }

    /// Remembers `key` as accepted at `at` (epoch seconds); one already remembered keeps its first
    /// time and origin. Forgets what the window or the capacity no longer holds.
    public mutating func insert(_ key: Int, at: Double, origin: Origin = .thisProcess) {
        let epoch = self.epoch ?? at
        self.epoch = epoch
        forget(before: at - window)
        guard keys.position(of: key) == nil else { return }
        if keys.count >= capacity { dropOldest() }
        keys.append(key, fromLedger: origin == .ledger, growingTo: capacity)
        let second = Int32(clamping: Int64((at - epoch).rounded(.down)))
        if let last = runs.last, last.second == second, last.count < Int32.max {
            runs[runs.count - 1].count += 1
        } else {
            runs.append(Run(second: second, count: 1))
        }
    }

    /// Forgets keys accepted before `cutoff` (epoch seconds). Keys are in the order they were
    /// remembered, which is their time order except for keys read back from the ledger after newer
    /// ones: those stay until the newer ones before them go (never longer than the capacity allows).
    public mutating func forget(before cutoff: Double) {
        guard let epoch else { return }
        while let first = runs.first, epoch + Double(first.second) < cutoff {
            runs.removeFirst()
            keys.removeOldest(Int(first.count))
        }
    }

    private mutating func dropOldest() {
        guard let first = runs.first else { return }
        if first.count == 1 { runs.removeFirst() } else { runs[0].count -= 1 }
        keys.removeOldest(1)
    }
}

/// A first-in, first-out set of 64-bit keys: a ring of the keys in the order they came, and an
/// index of ring positions by key (linear probing, at most half full, so a look-up reads a slot
/// or two). Removing the oldest deletes its slot by shifting back the slots after it, which keeps
/// every look-up's probe unbroken without tombstones.
struct KeyRing: Sendable {
    /// The keys, oldest at `start`; `ring.count` is the capacity reached so far.
    private var ring: [Int] = []
    /// One bit per ring position: the key was read back from the ledger.
    private var fromLedger: [UInt64] = []
    private var start = 0
    private(set) var count = 0
    /// Ring position + 1 of the key in each slot; 0: empty.
    private var slots: [UInt32] = []
    private var shift = 64

    func isFromLedger(_ position: Int) -> Bool { fromLedger[position >> 6] & (1 << UInt64(position & 63)) != 0 }

    func position(of key: Int) -> Int? {
        guard !slots.isEmpty else { return nil }
        var slot = home(key)
        while true {
            let entry = slots[slot]
            if entry == 0 { return nil }
            if ring[Int(entry) - 1] == key { return Int(entry) - 1 }
            slot = (slot + 1) & (slots.count - 1)
        }
    }

    /// Adds a key not in the set; the ring grows (doubling) up to `limit` keys, and the caller
    /// removes the oldest before adding past it.
    mutating func append(_ key: Int, fromLedger ledger: Bool, growingTo limit: Int) {
        if count == ring.count { grow(to: min(limit, max(1024, ring.count * 2))) }
        let position = (start + count) % ring.count
        ring[position] = key
        let bit: UInt64 = 1 << UInt64(position & 63)
        if ledger { fromLedger[position >> 6] |= bit } else { fromLedger[position >> 6] &= ~bit }
        count += 1
        var slot = home(key)
        while slots[slot] != 0 { slot = (slot + 1) & (slots.count - 1) }
        slots[slot] = UInt32(position + 1)
    }

    mutating func removeOldest(_ n: Int) {
        for _ in 0..<min(n, count) {
            removeSlot(of: ring[start], at: start)
            start = (start + 1) % ring.count
            count -= 1
        }
    }

    /// Fibonacci hashing: the top bits of the key times 2⁶⁴/φ, so keys that differ only in their
    /// low bits (a test's 1, 2, 3) spread too.
    private func home(_ key: Int) -> Int {
        Int(truncatingIfNeeded: (UInt64(bitPattern: Int64(key)) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
    }

    private mutating func removeSlot(of key: Int, at position: Int) {
        let mask = slots.count - 1
        var hole = home(key)
        while Int(slots[hole]) - 1 != position { hole = (hole + 1) & mask }
        // Knuth's deletion for linear probing: a later entry moves into the hole unless its home
        // lies cyclically after the hole (up to where it sits), where a look-up would not pass the hole.
        var next = (hole + 1) & mask
        while slots[next] != 0 {
            let wanted = home(ring[Int(slots[next]) - 1])
            let reachable = hole <= next ? (wanted <= hole || wanted > next) : (wanted <= hole && wanted > next)
            if reachable {
                slots[hole] = slots[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        slots[hole] = 0
    }

    /// Lays the ring out afresh from position 0 with room for `capacity` keys, and rebuilds the
    /// index at twice that or more (a power of two).
    private mutating func grow(to capacity: Int) {
        // The old index first: the peak is then the two rings, not the two indexes as well.
        slots = []
        var newRing = [Int](repeating: 0, count: capacity)
        var newLedger = [UInt64](repeating: 0, count: (capacity + 63) / 64)
        for i in 0..<count {
            let old = (start + i) % ring.count
            newRing[i] = ring[old]
            if isFromLedger(old) { newLedger[i >> 6] |= 1 << UInt64(i & 63) }
        }
        ring = newRing
        fromLedger = newLedger
        start = 0
        var size = 2
        while size < capacity * 2 { size *= 2 }
        shift = 64 - size.trailingZeroBitCount
        slots = [UInt32](repeating: 0, count: size)
        for i in 0..<count {
            var slot = home(ring[i])
            while slots[slot] != 0 { slot = (slot + 1) & (size - 1) }
            slots[slot] = UInt32(i + 1)
        }
    }
}
