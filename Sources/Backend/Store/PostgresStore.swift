import Foundation
import Logging
import NIOSSL
import PostgresNIO

/// PostgreSQL: several backend instances share one database, so they serve the same registrations
/// and payloads. Every operation is one statement; the migration runs under an advisory lock so two
/// instances starting together do not both apply it.
public final class PostgresStore: BackendStore {
    let client: PostgresClient
    /// The same server for the migration's own connection: it runs before the pool does.
    private let migrationConfiguration: PostgresConnection.Configuration
    private let logger: Logger

    /// `postgres://user@host:port/database`; the password is passed apart (a secret, never a flag).
    public init(url: String, password: String?, logger: Logger) throws(StoreError) {
        guard let components = URLComponents(string: url), let host = components.host, let user = components.user else {
            throw StoreError("--store: expected postgres://user@host[:port]/database")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let tls: PostgresClient.Configuration.TLS
        let migrationTLS: PostgresConnection.Configuration.TLS
        do {
            switch components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer" {
            case "disable":
                tls = .disable
                migrationTLS = .disable
            case "require", "verify-full":
                tls = .require(.makeClientConfiguration())
                migrationTLS = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            default:
                tls = .prefer(.makeClientConfiguration())
                migrationTLS = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        } catch {
            throw StoreError("--store: TLS for PostgreSQL: \(error)")
        }
        let port = components.port ?? 5432, secret = password ?? components.password,
            name = database.isEmpty ? nil : database
        migrationConfiguration = PostgresConnection.Configuration(
            host: host,
            port: port,
            username: user,
            password: secret,
            database: name,
            tls: migrationTLS
        )
        var configuration = PostgresClient.Configuration(
            host: host,
            port: port,
            username: user,
            password: secret,
            database: name,
            tls: tls
        )
        configuration.options.maximumConnections = 20
        // postgres-nio logs statements at debug: a quiet logger keeps bound values out of the log.
        var quiet = logger
        quiet.logLevel = .warning
        self.logger = quiet
        client = PostgresClient(configuration: configuration, backgroundLogger: quiet)
    }

    /// On a connection of its own, closed after: the pool serves nothing until its `run()` has
    /// started, which the service group does once the store is open.
    public func migrate() async throws(StoreError) {
        do {
            let connection = try await PostgresConnection.connect(
                configuration: migrationConfiguration,
                id: 0,
                logger: logger
            )
            do {
                try await Self.applyMigrations(on: connection, logger: logger)
                try await connection.close()
            } catch {
                try? await connection.close()
                throw error
            }
        } catch {
            throw StoreError("PostgreSQL migration: \(Self.describe(error))")
        }
    }

    /// Under an advisory lock, so two instances starting together do not both apply a step.
    private static func applyMigrations(on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("SELECT pg_advisory_lock(7316001)", logger: logger)
        do {
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)",
                logger: logger
            )
            var current = 0
            for try await version in try await connection.query(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
                logger: logger
            ).decode(Int.self) {
                current = version
            }
            for step in Migrations.postgres where step.version > current {
                try await connection.query("BEGIN", logger: logger)
                for statement in step.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (\(step.version), \(now))",
                    logger: logger
                )
                try await connection.query("COMMIT", logger: logger)
            }
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            _ = try? await connection.query("SELECT pg_advisory_unlock(7316001)", logger: logger)
            throw error
        }
        try await connection.query("SELECT pg_advisory_unlock(7316001)", logger: logger)
    }

    public func ping() async throws(StoreError) {
        try await run("SELECT 1")
    }

    public func close() async {}

    // MARK: Registrations

    public func insertRegistration(_ r: OwnedRegistration) async throws(StoreError) {
        try await run(
            """
            INSERT INTO registrations (id, owner, handle_hash, platform, tags, hub_id, updated_at)
            VALUES (\(r.id), \(r.owner), \(r.handleHash), \(r.platform), \(Migrations.join(r.tags)), \(r.hubID), \(Self.now))
            """
        )
    }

    /// In one transaction under an advisory lock on (owner, handle): the handle's rows go, the new
    /// one comes; instances replacing the same handle at once take turns.
    public func replaceRegistrations(with r: OwnedRegistration) async throws(StoreError) -> [OwnedRegistration] {
        let key = r.owner + "/" + r.handleHash
        do {
            return try await client.withTransaction(logger: logger) { connection in
                _ = try await connection.query(
                    "SELECT pg_advisory_xact_lock(hashtextextended(\(key), 7316002))",
                    logger: logger
                )
                let removed = try await Self.decodeRegistrations(
                    connection.query(
                        """
                        DELETE FROM registrations WHERE owner = \(r.owner) AND handle_hash = \(r.handleHash)
                        RETURNING id, owner, handle_hash, platform, tags, hub_id
                        """,
                        logger: logger
                    )
                )
                _ = try await connection.query(
                    """
                    INSERT INTO registrations (id, owner, handle_hash, platform, tags, hub_id, updated_at)
                    VALUES (\(r.id), \(r.owner), \(r.handleHash), \(r.platform), \(Migrations.join(r.tags)), \(r.hubID), \(Self.now))
                    """,
                    logger: logger
                )
                return removed
            }
        } catch {
            throw StoreError("PostgreSQL: \(Self.describe(error))")
        }
    }

    public func registration(id: String) async throws(StoreError) -> OwnedRegistration? {
        try await registrations(
            "SELECT id, owner, handle_hash, platform, tags, hub_id FROM registrations WHERE id = \(id)"
        ).first
    }

    public func registrations(owner: String) async throws(StoreError) -> [OwnedRegistration] {
        try await registrations(
            "SELECT id, owner, handle_hash, platform, tags, hub_id FROM registrations WHERE owner = \(owner)"
        )
    }

    public func updateRegistration(_ r: OwnedRegistration) async throws(StoreError) -> Bool {
        try await count(
            """
            UPDATE registrations SET handle_hash = \(r.handleHash), platform = \(r.platform), tags = \(Migrations.join(r.tags)),
                hub_id = \(r.hubID), updated_at = \(Self.now)
            WHERE id = \(r.id) AND owner = \(r.owner) RETURNING id
            """
        ) > 0
    }

    public func deleteRegistration(id: String, owner: String) async throws(StoreError) -> Bool {
        try await count("DELETE FROM registrations WHERE id = \(id) AND owner = \(owner) RETURNING id") > 0
    }

    // MARK: Payloads

    public func nextPayloadID() async throws(StoreError) -> Int64 {
        do {
            for try await n in try await client.query("SELECT nextval('payload_ids')", logger: logger).decode(
                Int64.self
            ) { return n }
        } catch {
            throw StoreError("PostgreSQL: \(Self.describe(error))")
        }
        throw StoreError("no payload id returned")
    }

    public func insertPayload(_ p: SecurePayload) async throws(StoreError) -> Bool {
        try await count(
            """
            INSERT INTO payloads (id, users, tag_expression, payload, body, url, expires_at)
            VALUES (\(p.id), \(p.users.map(Migrations.join)), \(p.tagExpression), \(p.payload), \(p.body), \(p.url), \(p.expiresAt))
            ON CONFLICT (id) DO NOTHING RETURNING id
            """
        ) > 0
    }

    public func payload(id: String, now: Int64) async throws(StoreError) -> SecurePayload? {
        do {
            let rows = try await client.query(
                """
                SELECT id, users, tag_expression, payload, body, url, expires_at FROM payloads WHERE id = \(id) AND expires_at > \(now)
                """,
                logger: logger
            )
            for try await (id, users, expression, payload, body, url, expiresAt) in rows.decode(
                (String, String?, String?, String, String?, String?, Int64).self
            ) {
                return SecurePayload(
                    id: id,
                    users: users.map(Migrations.split),
                    tagExpression: expression,
                    payload: payload,
                    body: body,
                    url: url,
                    expiresAt: expiresAt
                )
            }
            return nil
        } catch {
            throw StoreError("PostgreSQL: \(Self.describe(error))")
        }
    }

    public func deleteExpiredPayloads(now: Int64) async throws(StoreError) -> Int {
        try await count("DELETE FROM payloads WHERE expires_at <= \(now) RETURNING id")
    }

    // MARK: Plumbing

    private static var now: Int64 { Int64(Date().timeIntervalSince1970) }

    private func run(_ query: PostgresQuery) async throws(StoreError) {
        _ = try await count(query)
    }

    private func count(_ query: PostgresQuery) async throws(StoreError) -> Int {
        do {
            var n = 0
            for try await _ in try await client.query(query, logger: logger) { n += 1 }
            return n
        } catch {
            throw StoreError("PostgreSQL: \(Self.describe(error))")
        }
    }

    private func registrations(_ query: PostgresQuery) async throws(StoreError) -> [OwnedRegistration] {
        do {
            return try await Self.decodeRegistrations(client.query(query, logger: logger))
        } catch {
            throw StoreError("PostgreSQL: \(Self.describe(error))")
        }
    }

    private static func decodeRegistrations(_ rows: PostgresRowSequence) async throws -> [OwnedRegistration] {
        var found: [OwnedRegistration] = []
        for try await (id, owner, hash, platform, tags, hubID) in rows.decode(
            (String, String, String, String?, String, String).self
        ) {
            found.append(
                OwnedRegistration(
                    id: id,
                    owner: owner,
                    handleHash: hash,
                    platform: platform,
                    tags: Migrations.split(tags),
                    hubID: hubID
                )
            )
        }
        return found
    }

    /// PSQLError's description can include the statement; only the server's message and code go out.
    private static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            let message = error.serverInfo?[.message] ?? "\(error.code)"
            let code = error.serverInfo?[.sqlState] ?? ""
            return "\(message) \(code)".trimmingCharacters(in: .whitespaces)
        }
        return String(describing: type(of: error))
    }
}
