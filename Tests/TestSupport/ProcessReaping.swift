import Foundation

extension Process {
    /// Waits for the exit and returns the status as `terminationStatus` gives it (-1 if it was
    /// reaped here before, Foundation having missed it): SIGTERM once `terminateAfter` has passed
    /// (if given), SIGKILL once `killAfter` has. Never `waitUntilExit`: Foundation once missed a
    /// child's exit in a test run (the child a zombie, `isRunning` true for good) and
    /// `waitUntilExit` then spun a core until CI's limit. Here the exit is the event waited for
    /// (`waitid`), and the child is reaped by pid if Foundation has not noticed it within 2 s.
    /// Replaces any `terminationHandler`.
    @discardableResult
    public func reap(terminateAfter: Duration? = nil, killAfter: Duration = .seconds(10)) -> Int32 {
        // Foundation reaps its children itself and says so through `terminationHandler`; set
        // before `isRunning` is asked, so that an exit noticed in between is not missed. A
        // semaphore, because that callback (from Foundation's SIGCHLD source) is the only word of
        // the reaping, and this function is synchronous.
        let noticed = DispatchSemaphore(value: 0)
        terminationHandler = { _ in noticed.signal() }
        guard isRunning else { return terminationStatus }
        let pid = processIdentifier
        let signals = Signals(pid: pid)
        if let terminateAfter { signals.send(SIGTERM, after: terminateAfter) }
        signals.send(SIGKILL, after: killAfter)
        // The exit itself, without reaping (WNOWAIT): that is Foundation's to do. A signal sent
        // between the exit and its reaping reaches the zombie, harmlessly.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1 && errno == EINTR {}
        signals.stop()
        if noticed.wait(timeout: .now() + 2) == .success { return terminationStatus }
        // Foundation missed it (the child a zombie, `isRunning` true for good): reaped here.
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == pid ? Self.exitStatus(status) : -1
    }

    /// A `waitpid` status as `terminationStatus` gives it: the exit code, or the signal.
    static func exitStatus(_ status: Int32) -> Int32 {
        status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }
}

/// Signals for one child at set times, until `stop`.
private final class Signals: @unchecked Sendable {
    private let pid: pid_t
    private let lock = NSLock()
    private var stopped = false

    init(pid: pid_t) { self.pid = pid }

    func send(_ signal: Int32, after delay: Duration) {
        let (seconds, attoseconds) = delay.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
            lock.withLock { if !stopped { _ = kill(pid, signal) } }
        }
    }

    func stop() { lock.withLock { stopped = true } }
}
