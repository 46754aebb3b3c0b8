import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs each test of a suite on a low-priority thread of its own instead of Swift's cooperative pool.
///
/// The pool has one thread per core: two in CI. A simulation or fuzz loop that computes for
/// minutes without an `await` holds a pool thread all that time, and the suites that wait on
/// events starve behind it: in a full run on 2 cores, a canary test that takes 10 ms alone ran
/// past its one-minute guard. Moved to threads of their own at normal priority, the simulations
/// (dozens of test cases) crowded out the pool just as well through the kernel. At the idle
/// scheduling policy they take the cores only when the pool, the servers and the binaries under
/// test leave them idle, which in a full run they mostly do: those wait on events.
///
/// The test stays the same task (its issues are recorded as usual); work it starts in child tasks
/// runs on the same thread, one piece at a time.
public struct OwnThreadTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        // Applied to a suite, this is called for the suite itself too: only test cases move.
        guard testCase != nil else { return try await function() }
        let executor = BackgroundThreadExecutor(name: "tests-\(test.name.prefix(8))")
        defer { executor.finish() }
        try await withTaskExecutorPreference(executor) { try await function() }
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Runs each test on a low-priority thread of its own: for tests that compute for long
    /// without awaiting.
    public static var ownThread: Self { Self() }
}

/// A task executor with one thread, scheduled only when a core is otherwise idle, that runs its
/// jobs in order.
private final class BackgroundThreadExecutor: TaskExecutor {
    // Each job and the end of the scope signal `ready` once, so each wake finds one of them.
    private let state = Mutex<(jobs: [UnownedJob], finished: Bool)>(([], false))
    private let ready = DispatchSemaphore(value: 0)

    init(name: String) {
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        state.withLock { $0.jobs.append(job) }
        ready.signal()
    }

    /// The thread exits once the jobs queued so far have run.
    func finish() {
        state.withLock { $0.finished = true }
        ready.signal()
    }

    private func run() {
        // Linux's SCHED_IDLE (5; Glibc's module leaves the GNU names out): this thread runs only
        // when no other wants the core.
        var parameters = sched_param(sched_priority: 0)
        _ = pthread_setschedparam(pthread_self(), 5, &parameters)
        let executor = asUnownedTaskExecutor()
        while true {
            ready.wait()
            let next: UnownedJob? = state.withLock { $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }
            guard let next else { return }
            next.runSynchronously(on: executor)
        }
    }
}
