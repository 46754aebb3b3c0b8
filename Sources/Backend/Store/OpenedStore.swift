import Logging
import ServiceLifecycle

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
            return OpenedStore(store: store, services: [PostgresPoolService(runner: runner)])
        }
        let path = location.hasPrefix("sqlite:") ? String(location.dropFirst("sqlite:".count)) : location
        let store = try await SQLiteStore.open(path: path)
        try await store.migrate()
        return OpenedStore(store: store, services: [])
    }
}

/// Keeps the already-running PostgreSQL pool for the service group, and stops it at shutdown.
struct PostgresPoolService: Service, CustomStringConvertible {
    var description: String { "PostgresPool" }

    let runner: Task<Void, Never>

    func run() async throws {
        let runner = self.runner
        await withTaskCancellationHandler {
            try? await gracefulShutdown()
        } onCancel: {
            runner.cancel()
        }
        runner.cancel()
        await runner.value
    }
}
