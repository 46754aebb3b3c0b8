import Kafka
import Metrics
import ServiceLifecycle
import Synchronization

/// Asks the store whether it answers, every `interval`, for `/readyz` on the operations port (a
/// probe reads the last answer at once instead of waiting on the database), and times each answer.
///
/// A ping that has not answered by the next look counts as "no answer" at once, and no second one
/// starts while it hangs: a query already written to a half-open connection ignores cancellation
/// and may take the kernel's retransmission timeout (minutes) to fail, and neither the verdict nor
/// a shutdown may wait for it.
public struct StoreWatch: Service {
    let store: any BackendStore
    let interval: Duration
    /// nil: the store answered; else why not (log-safe).
    let report: @Sendable (String?) -> Void
    private let latency = Timer(label: "hubcast_backend_store_ping")

    public init(
        store: any BackendStore,
        interval: Duration = .seconds(5),
        report: @escaping @Sendable (String?) -> Void
    ) {
        self.store = store
        self.interval = interval
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
                let ping = Ping(), store = self.store, report = self.report, latency = self.latency
                let started = clock.now
                let task = Task {
                    var failure: String?
                    do throws(StoreError) { try await store.ping() } catch { failure = error.description }
                    if failure == nil { latency.recordNanoseconds(started.duration(to: clock.now).inNanoseconds) }
                    ping.answer.withLock { $0 = .some(failure) }
                    report(failure)
                }
                pending = (ping, task, started)
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
