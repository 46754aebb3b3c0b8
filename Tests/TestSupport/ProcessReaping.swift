import Foundation

extension Process {
    /// Waits for the exit and returns the status as `terminationStatus` gives it, SIGKILLing the
    /// child once `killAfter` has passed. Never `waitUntilExit`: Foundation once missed a child's
    /// exit in a test run (the child a zombie, `isRunning` true for good) and `waitUntilExit` then
    /// spun a core until CI's limit. Here the child is reaped by pid if Foundation has not.
    @discardableResult
    public func reap(killAfter: Duration = .seconds(10)) -> Int32 {
        let pid = processIdentifier
        let start = ContinuousClock.now
        var killed = false
        while isRunning {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return Self.exitStatus(status) }
            if !killed, ContinuousClock.now - start > killAfter {
                kill(pid, SIGKILL)
                killed = true
            }
            usleep(5_000)
        }
        return terminationStatus
    }

    /// A `waitpid` status as `terminationStatus` gives it: the exit code, or the signal.
    public static func exitStatus(_ status: Int32) -> Int32 {
        status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }
}
