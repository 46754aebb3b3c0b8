import Foundation
import Testing

/// Runs each test of a suite on two threads set aside for long computations, instead of Swift's
/// cooperative pool.
///
/// The pool has one thread per core: two in CI. A simulation or fuzz loop that computes for
/// minutes holds a pool thread all that time (yielding now and then only lets the next simulation
/// in), and the suites that wait on events starve behind them: in a full run on 2 cores no unit
/// test finished before 60 s, and a canary test that takes 10 ms alone ran past its one-minute
/// guard. On these two threads the simulations take turns among themselves, and the kernel shares
/// the cores between them, the pool and the processes under test.
///
/// (A thread per test at normal priority let 40 simulations crowd the pool out through the
/// kernel instead; at Linux's idle priority, a simulation preempted while it held a lock, of
/// malloc's say, could hold up a normal thread for as long as the machine stayed busy.)
///
/// The test stays the same task (its issues are recorded as usual); work it starts in child tasks
/// runs on the same two threads.
public struct ComputeThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        // Applied to a suite, this is called for the suite itself too: only test cases move.
        guard testCase != nil else { return try await function() }
        try await withTaskExecutorPreference(ComputeThreads.shared) { try await function() }
    }
}

extension Trait where Self == ComputeThreadsTrait {
    /// Runs each test on the threads set aside for long computations: for tests that compute for
    /// long without awaiting.
    public static var onComputeThreads: Self { Self() }
}

/// A task executor of two threads that run the jobs in the order they came.
///
/// Its jobs are guarded by an NSCondition (a pthread mutex and condition variable), not a
/// Synchronization.Mutex with a semaphore: `make tsan` runs suites on these threads, and the thread
/// sanitizer does not see a contended Mutex (a futex), so it reported the guarded array as raced.
/// `@unchecked Sendable` for that reason only: `jobs` is touched with `condition` held, nowhere else.
private final class ComputeThreads: TaskExecutor, @unchecked Sendable {
    static let shared = ComputeThreads(count: 2)

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    private init(count: Int) {
        for n in 0..<count {
            let thread = Thread { [self] in run() }
            thread.name = "tests-compute-\(n)"
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// An idle thread of this executor's own (never a Swift task, never the cooperative pool's)
    /// waits on the condition until a job comes.
    private func run() {
        let executor = asUnownedTaskExecutor()
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let next = jobs.removeFirst()
            condition.unlock()
            next.runSynchronously(on: executor)
        }
    }
}
