import Metrics
import ServiceLifecycle
import Synchronization

/// Asks a dependency (Kafka, a database) whether it answers, every `interval`, for `/readyz` (a
/// probe reads the last answer at once instead of waiting on the dependency), and times each answer.
///
/// A ping that has not answered by the next look counts as "no answer" at once, and no second one
/// starts while it hangs: a request already written to a half-open connection may ignore
/// cancellation and take the kernel's retransmission timeout (minutes) to fail, and neither the
/// verdict nor a shutdown may wait for it.
public struct PingWatch: Service {
    let interval: Duration
    /// nil: it answered; else why not (log-safe).
    let ping: @Sendable () async -> String?
    let report: @Sendable (String?) -> Void
    let latency: Timer?

    public init(
        interval: Duration = .seconds(5),
        latency: Timer? = nil,
        ping: @escaping @Sendable () async -> String?,
        report: @escaping @Sendable (String?) -> Void
    ) {
        self.interval = interval
        self.latency = latency
        self.ping = ping
        self.report = report
    }

    /// The ping under way: nil until it answers, then its failure (or "" for none).
    private final class Ping: Sendable {
        let answer = Mutex<String??>(nil)
    }

    public func run() async throws {
        let clock = ContinuousClock()
        var pending: (ping: Ping, task: Task<Void, Never>, started: ContinuousClock.Instant)?
        defer { pending?.task.cancel() }
        while !Task.isShuttingDownGracefully {
            if pending == nil {
                // The answer is reported as soon as it comes; the loop only says when it does not.
                let current = Ping(), ping = self.ping, report = self.report, latency = self.latency
                let started = clock.now
                let task = Task {
                    let failure = await ping()
                    if failure == nil { latency?.recordNanoseconds(started.duration(to: clock.now).inNanoseconds) }
                    current.answer.withLock { $0 = .some(failure) }
                    report(failure)
                }
                pending = (current, task, started)
            }
            do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) } } catch { return }
            guard let current = pending else { continue }
            if current.ping.answer.withLock({ $0 }) != nil {
                pending = nil
            } else {
                report("no answer for \(current.started.duration(to: clock.now).components.seconds) s")
            }
        }
    }
}
