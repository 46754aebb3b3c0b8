import Synchronization

/// A clock that moves only when a test advances it; sleepers wake in deadline order.
final class ManualClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    private struct Sleeper {
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID = 0
        var sleepers: [Int: Sleeper] = [:]
    }

    private let state = Mutex(State())
    private let sleeping: AsyncStream<Void>
    private let sleepingContinuation: AsyncStream<Void>.Continuation

    init() {
        (sleeping, sleepingContinuation) = AsyncStream.makeStream()
    }

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready = state.withLock { s -> Bool in
                    if deadline <= s.now { return true }
                    if Task.isCancelled { return true }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return false
                }
                if ready {
                    continuation.resume()
                } else {
                    sleepingContinuation.yield()
                }
            }
            try Task.checkCancellation()
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time on and wakes every sleeper whose deadline has come.
    func advance(by duration: Duration) {
        let due = state.withLock { s -> [Sleeper] in
            s.now = s.now.advanced(by: duration)
            let now = s.now
            let due = s.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { s.sleepers[id] = nil }
            return due.values.sorted { $0.deadline < $1.deadline }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Waits until `count` tasks sleep on this clock (e.g. the pipeline's ticker is armed).
    func waitForSleepers(_ count: Int = 1) async {
        if state.withLock({ $0.sleepers.count >= count }) { return }
        for await _ in sleeping {
            if state.withLock({ $0.sleepers.count >= count }) { return }
        }
    }
}
