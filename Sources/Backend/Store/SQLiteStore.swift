import Foundation
import Logging
import NIOCore
import NIOPosix
import SQLiteNIO

/// The default store: one SQLite file, nothing to run. One connection, so one backend process per
/// file; several instances share a PostgreSQL database instead.
public final class SQLiteStore: BackendStore {
    private let connection: SQLiteConnection

    private init(connection: SQLiteConnection) {
        self.connection = connection
    }

    /// Opens (creating it if needed) the database file with mode 0600.
    public static func open(path: String) async throws(StoreError) -> SQLiteStore {
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
            else {
                throw StoreError("cannot create the SQLite file \(path)")
            }
        }
        // sqlite-nio logs statements and their values at debug: a quiet logger keeps handles and payloads out.
        var quiet = Logger(label: "hubcast.backend.sqlite")
        quiet.logLevel = .critical
        do {
            let connection = try await SQLiteConnection.open(storage: .file(path: path), logger: quiet)
            let store = SQLiteStore(connection: connection)
            _ = try await connection.query("PRAGMA journal_mode=WAL")
            _ = try await connection.query("PRAGMA busy_timeout=5000")
            return store
        } catch {
            throw StoreError("cannot open the SQLite file \(path): \(Self.describe(error))")
        }
    }

    public func migrate() async throws(StoreError) {
        try await run(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)"
        )
        try await run("BEGIN IMMEDIATE")
        do throws(StoreError) {
            let rows = try await rows("SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations")
            let current = rows.first?.column("v")?.integer ?? 0
            for step in Migrations.sqlite where step.version > current {
                for statement in step.statements { try await run(statement) }
                try await run(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                    [.integer(step.version), .integer(Self.now)]
                )
            }
            try await run("COMMIT")
        } catch {
            try? await run("ROLLBACK")
            throw error
        }
    }

    public func ping() async throws(StoreError) { _ = try await rows("SELECT 1 AS one") }

    /// Closes the connection even from a cancelled task: sqlite-nio asserts that a connection is closed
    /// before it goes, and its close would refuse to run for a cancelled caller.
    public func close() async {
        let connection = self.connection
        await Task { try? await connection.close() }.value
    }

    // MARK: Registrations

    public func insertRegistration(_ r: OwnedRegistration) async throws(StoreError) {
        try await run(
            "INSERT INTO registrations (id, owner, handle_hash, platform, tags, hub_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                .text(r.id), .text(r.owner), .text(r.handleHash), r.platform.map { .text($0) } ?? .null,
                .text(Migrations.join(r.tags)), .text(r.hubID), .integer(Self.now),
            ]
        )
    }

    /// Insert, then delete the handle's rows inserted before it (lower rowid): SQLite runs one
    /// statement at a time, so of registrations made at once the newest stays, whatever the order.
    public func replaceRegistrations(with r: OwnedRegistration) async throws(StoreError) -> [OwnedRegistration] {
        try await insertRegistration(r)
        return try await rows(
            """
            DELETE FROM registrations WHERE owner = ? AND handle_hash = ? AND id <> ?
                AND rowid < (SELECT rowid FROM registrations WHERE id = ?)
            RETURNING *
            """,
            [.text(r.owner), .text(r.handleHash), .text(r.id), .text(r.id)]
        ).map(Self.registration)
    }

    public func registration(id: String) async throws(StoreError) -> OwnedRegistration? {
        try await rows("SELECT * FROM registrations WHERE id = ?", [.text(id)]).first.map(Self.registration)
    }

    public func registrations(owner: String) async throws(StoreError) -> [OwnedRegistration] {
        try await rows("SELECT * FROM registrations WHERE owner = ?", [.text(owner)]).map(Self.registration)
    }

    public func updateRegistration(_ r: OwnedRegistration) async throws(StoreError) -> Bool {
        let changed = try await rows(
            """
            UPDATE registrations SET handle_hash = ?, platform = ?, tags = ?, hub_id = ?, updated_at = ?
            WHERE id = ? AND owner = ? RETURNING id
            """,
            [
                .text(r.handleHash), r.platform.map { .text($0) } ?? .null, .text(Migrations.join(r.tags)),
                .text(r.hubID),
                .integer(Self.now), .text(r.id), .text(r.owner),
            ]
        )
        return !changed.isEmpty
    }

    public func deleteRegistration(id: String, owner: String) async throws(StoreError) -> Bool {
        !(try await rows(
            "DELETE FROM registrations WHERE id = ? AND owner = ? RETURNING id",
            [.text(id), .text(owner)]
        )).isEmpty
    }

    // MARK: Payloads

    public func nextPayloadID() async throws(StoreError) -> Int64 {
        guard
            let n = try await rows("INSERT INTO payload_ids (taken_at) VALUES (?) RETURNING n", [.integer(Self.now)])
                .first?.column("n")?.integer
        else {
            throw StoreError("no payload id returned")
        }
        return Int64(n)
    }

    public func insertPayload(_ p: SecurePayload) async throws(StoreError) -> Bool {
        let inserted = try await rows(
            """
            INSERT INTO payloads (id, users, tag_expression, payload, body, url, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (id) DO NOTHING RETURNING id
            """,
            [
                .text(p.id), p.users.map { .text(Migrations.join($0)) } ?? .null,
                p.tagExpression.map { .text($0) } ?? .null,
                .text(p.payload), p.body.map { .text($0) } ?? .null, p.url.map { .text($0) } ?? .null,
                .integer(Int(p.expiresAt)),
            ]
        )
        return !inserted.isEmpty
    }

    public func payload(id: String, now: Int64) async throws(StoreError) -> SecurePayload? {
        try await rows("SELECT * FROM payloads WHERE id = ? AND expires_at > ?", [.text(id), .integer(Int(now))]).first
            .map { row in
                SecurePayload(
                    id: row.column("id")?.string ?? "",
                    users: row.column("users")?.string.map(Migrations.split),
                    tagExpression: row.column("tag_expression")?.string,
                    payload: row.column("payload")?.string ?? "",
                    body: row.column("body")?.string,
                    url: row.column("url")?.string,
                    expiresAt: Int64(row.column("expires_at")?.integer ?? 0)
                )
            }
    }

    public func deleteExpiredPayloads(now: Int64) async throws(StoreError) -> Int {
        try await rows("DELETE FROM payloads WHERE expires_at <= ? RETURNING id", [.integer(Int(now))]).count
    }

    // MARK: Plumbing

    private static func registration(_ row: SQLiteRow) -> OwnedRegistration {
        OwnedRegistration(
            id: row.column("id")?.string ?? "",
            owner: row.column("owner")?.string ?? "",
            handleHash: row.column("handle_hash")?.string ?? "",
            platform: row.column("platform")?.string,
            tags: Migrations.split(row.column("tags")?.string ?? ""),
            hubID: row.column("hub_id")?.string ?? ""
        )
    }

    private static var now: Int { Int(Date().timeIntervalSince1970) }

    private func run(_ sql: String, _ binds: [SQLiteData] = []) async throws(StoreError) {
        _ = try await rows(sql, binds)
    }

    private func rows(_ sql: String, _ binds: [SQLiteData] = []) async throws(StoreError) -> [SQLiteRow] {
        do {
            return try await connection.query(sql, binds)
        } catch {
            throw StoreError("SQLite: \(Self.describe(error))")
        }
    }

    /// SQLite's message names the failing statement's problem, never the bound values.
    private static func describe(_ error: any Error) -> String {
        if let error = error as? SQLiteError { return error.message }
        return String(describing: type(of: error))
    }
}
