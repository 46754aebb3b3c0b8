import Foundation
import Synchronization
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
private final class ComputeThreads: TaskExecutor {
    static let shared = ComputeThreads(count: 2)

    // Each job signals `ready` once, so each wake finds one. The semaphore is what an idle thread
    // of this executor's own (never a Swift task, never the cooperative pool's) blocks on until a
    // job comes: an executor's threads have nothing else to wait with.
    private let jobs = Mutex<[UnownedJob]>([])
    private let ready = DispatchSemaphore(value: 0)

    private init(count: Int) {
        for n in 0..<count {
            let thread = Thread { [self] in run() }
            thread.name = "tests-compute-\(n)"
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        ready.signal()
    }

    private func run() {
        let executor = asUnownedTaskExecutor()
        while true {
            ready.wait()
            guard let next = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
            next.runSynchronously(on: executor)
        }
    }
}
