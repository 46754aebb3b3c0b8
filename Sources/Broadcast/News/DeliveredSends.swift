import Foundation
import Synchronization

/// The (item, platform, audience) sends this process delivered recently, or is delivering now,
/// or read back from the delivered-sends ledger, so that an item read again (a rebalance, a
/// restart, a copy in another partition, a replay) does not go to the same audience twice.
/// Marked delivered on acceptance, never before: an item whose send never started is not mistaken
/// for a duplicate. A pair already in flight makes a second copy wait for the first's outcome:
/// skipped if it was accepted, sent if it failed. Without the ledger, an optimisation within one
/// process; with it, what the hub accepted anywhere in the window (but the last few sends before a
/// crash, which the ledger had not stored yet).
public final class DeliveredSends: Sendable {
    /// What a send of a pair may do now.
    public enum Claim: Sendable, Equatable {
        /// Send it: nobody else is.
        case send
        /// The hub already accepted this pair: in this process, or (`.ledger`) as the ledger says.
        case duplicate(RecentKeys.Origin)
    }

    private let state: Mutex<InFlightPairs>

    private let clock: @Sendable () -> Double

    /// `window`: seconds a pair is remembered; `capacity`: pairs remembered at most.
    public init(
        window: Double = 86_400,
        capacity: Int = 1_000_000,
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        state = Mutex(InFlightPairs(window: window, capacity: capacity))
        self.clock = clock
    }

    /// Whether, and where from, the pair is known delivered (the preparer's check, before any
    /// send is planned).
    func contains(_ key: Int) -> RecentKeys.Origin? {
        state.withLock { $0.delivered.contains(key) }
    }

    /// Pairs the ledger says the hub accepted, each at its time (epoch seconds).
    public func remember(ledger pairs: [(key: Int, at: Double)]) {
        let now = clock()
        state.withLock { state in
            let cutoff = now - state.delivered.window
            for pair in pairs where pair.at >= cutoff {
                state.delivered.insert(pair.key, at: min(pair.at, now), origin: .ledger)
            }
        }
    }

    /// Pairs remembered now (for tests).
    public var count: Int { state.withLock { $0.delivered.count } }

    /// Claims the pair for one send without waiting: nil while another send of it is in flight.
    /// Every `.send` must be followed by `finished`.
    func tryClaim(_ key: Int) -> Claim? {
        state.withLock { $0.claim(key) }
    }

    /// Claims the pair for one send; waits while another send of it is in flight. Every `.send`
    /// must be followed by `finished`.
    func claim(_ key: Int) async -> Claim {
        // The common case takes the lock once and never suspends.
        if let claim = state.withLock({ $0.claim(key) }) { return claim }
        while true {
            let outcome: InFlightPairs.Wake = await withCheckedContinuation { continuation in
                if let claim = state.withLock({ $0.claim(key, orWait: continuation) }) {
                    continuation.resume(returning: claim == .send ? .yourTurn : .accepted)
                }
            }
            switch outcome {
            case .accepted: return .duplicate(.thisProcess)
            case .yourTurn: return .send
            case .tryAgain: continue
            }
        }
    }

    /// Copies of the pair waiting for its send in flight (for tests, which wait on it instead of sleeping).
    func waiting(_ key: Int) -> Int {
        state.withLock { $0.waiting(key) }
    }

    /// The claimed send ended: accepted marks the pair delivered; either way, copies waiting on
    /// it wake up (to skip, or for one of them to send).
    func finished(_ key: Int, accepted: Bool) {
        let now = accepted ? clock() : 0
        let waiters = state.withLock { $0.finished(key, accepted: accepted, at: now) }
        for waiter in waiters { waiter.resume(returning: accepted ? .accepted : .tryAgain) }
    }
}

/// The state behind `DeliveredSends`: a value whose methods say who to wake; the caller resumes
/// them outside the lock.
struct InFlightPairs {
    enum Wake: Sendable { case accepted, yourTurn, tryAgain }

    var delivered: RecentKeys
    /// Pairs being sent now, and the copies waiting for each.
    private var inFlight: [Int: [CheckedContinuation<Wake, Never>]] = [:]

    init(window: Double, capacity: Int) {
        delivered = RecentKeys(window: window, capacity: capacity)
    }

    /// `.send` (now claimed), `.duplicate`, or nil when another send of the pair is in flight.
    mutating func claim(_ key: Int) -> DeliveredSends.Claim? {
        if let origin = delivered.contains(key) { return .duplicate(origin) }
        if inFlight[key] != nil { return nil }
        inFlight[key] = []
        return .send
    }

    /// As `claim`, but a copy that must wait is queued with its continuation.
    mutating func claim(_ key: Int, orWait continuation: CheckedContinuation<Wake, Never>) -> DeliveredSends.Claim? {
        guard let claim = claim(key) else {
            inFlight[key, default: []].append(continuation)
            return nil
        }
        return claim
    }

    func waiting(_ key: Int) -> Int { inFlight[key]?.count ?? 0 }

    mutating func finished(_ key: Int, accepted: Bool, at: Double) -> [CheckedContinuation<Wake, Never>] {
        if accepted { delivered.insert(key, at: at) }
        return inFlight.removeValue(forKey: key) ?? []
    }
}
