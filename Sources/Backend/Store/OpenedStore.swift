import Logging
import ServiceLifecycle
import Synchronization

/// A store chosen by its location, migrated, with the services it needs running (PostgreSQL's pool).
public struct OpenedStore: Sendable {
    public let store: any BackendStore
    public let services: [any Service]

    /// Where failed logins are counted: in PostgreSQL when several instances may share it, else here.
    public func failedLogins(_ throttle: LoginThrottle, logger: Logger) -> any FailedLogins {
        if let postgres = store as? PostgresStore {
            return PostgresFailedLogins(store: postgres, throttle: throttle, logger: logger)
        }
        return LocalFailedLogins(throttle)
    }

    /// `postgres://user@host:port/database` (password separately, from a secret) or a SQLite file path.
    public static func open(location: String, password: String?, logger: Logger) async throws(StoreError) -> OpenedStore
    {
        if location.hasPrefix("postgres://") || location.hasPrefix("postgresql://") {
            let store = try PostgresStore(url: location, password: password, logger: logger)
            // The migration has a connection of its own; the pool runs from here, before anything
            // (a request, a readiness probe) leases from it.
            try await store.migrate()
            let runner = Task { await store.client.run() }
            return OpenedStore(store: store, services: [PostgresPoolService(runner: runner, logger: logger)])
        }
        let path = location.hasPrefix("sqlite:") ? String(location.dropFirst("sqlite:".count)) : location
        let store = try await SQLiteStore.open(path: path)
        try await store.migrate()
        return OpenedStore(store: store, services: [])
    }
}

/// Keeps the already-running PostgreSQL pool for the service group, and stops it at shutdown.
///
/// Its stop is bounded: the pool was seen, once in many test runs, never to return from its run
/// after cancellation (no query running, one idle connection), which held `hubcast backend` after
/// SIGTERM for good. Past `closeLimit` the process goes on without it; the server closes the
/// connections it leaves when the process exits.
struct PostgresPoolService: Service, CustomStringConvertible {
    var description: String { "PostgresPool" }

    let runner: Task<Void, Never>
    let logger: Logger
    var closeLimit: Duration = .seconds(5)

    func run() async throws {
        let runner = self.runner
        await withTaskCancellationHandler {
            try? await gracefulShutdown()
        } onCancel: {
            runner.cancel()
        }
        runner.cancel()
        if await !Self.finished(runner, within: closeLimit) {
            logger.warning(
                "The PostgreSQL pool did not close in time; stopping without it",
                metadata: ["limitSeconds": "\(closeLimit.components.seconds)"]
            )
        }
    }

    /// True if `task` ends within `limit`. Waiting on an unstructured task ignores cancellation, so
    /// the two waits race in tasks of their own and the first to end answers.
    static func finished(_ task: Task<Void, Never>, within limit: Duration) async -> Bool {
        let answer = Mutex<CheckedContinuation<Bool, Never>?>(nil)
        let resume: @Sendable (Bool) -> Void = { value in
            answer.withLock { continuation in
                continuation?.resume(returning: value)
                continuation = nil
            }
        }
        return await withCheckedContinuation { continuation in
            answer.withLock { $0 = continuation }
            Task {
                await task.value
                resume(true)
            }
            Task {
                try? await Task.sleep(for: limit)
                resume(false)
            }
        }
    }
}
