/// The schema, one numbered step at a time: a database remembers the steps it took
/// (`schema_migrations`) and a newer backend adds only the ones it lacks. Never edit a
/// released step; add the next one.
enum Migrations {
    struct Step: Sendable {
        let version: Int
        let statements: [String]
    }

    static let sqlite: [Step] = [
        Step(
            version: 1,
            statements: [
                """
                CREATE TABLE registrations (id TEXT PRIMARY KEY, owner TEXT NOT NULL, handle_hash TEXT NOT NULL,
                    platform TEXT, tags TEXT NOT NULL DEFAULT '', hub_id TEXT NOT NULL, updated_at INTEGER NOT NULL)
                """,
                "CREATE INDEX registrations_owner_handle ON registrations (owner, handle_hash)",
                """
                CREATE TABLE payloads (id TEXT PRIMARY KEY, users TEXT, tag_expression TEXT, payload TEXT NOT NULL,
                    body TEXT, url TEXT, expires_at INTEGER NOT NULL)
                """,
                "CREATE INDEX payloads_expires_at ON payloads (expires_at)",
                "CREATE TABLE payload_ids (n INTEGER PRIMARY KEY AUTOINCREMENT, taken_at INTEGER NOT NULL)",
            ]
        )
    ]

    static let postgres: [Step] = [
        Step(
            version: 1,
            statements: [
                """
                CREATE TABLE registrations (id TEXT PRIMARY KEY, owner TEXT NOT NULL, handle_hash TEXT NOT NULL,
                    platform TEXT, tags TEXT NOT NULL DEFAULT '', hub_id TEXT NOT NULL, updated_at BIGINT NOT NULL)
                """,
                "CREATE INDEX registrations_owner_handle ON registrations (owner, handle_hash)",
                """
                CREATE TABLE payloads (id TEXT PRIMARY KEY, users TEXT, tag_expression TEXT, payload TEXT NOT NULL,
                    body TEXT, url TEXT, expires_at BIGINT NOT NULL)
                """,
                "CREATE INDEX payloads_expires_at ON payloads (expires_at)",
                "CREATE SEQUENCE payload_ids",
            ]
        ),
        // Failed logins shared by every instance (PostgresFailedLogins); SQLite serves one process,
        // which counts them in memory.
        Step(
            version: 2,
            statements: [
                """
                CREATE TABLE login_failures (key TEXT PRIMARY KEY, window_start DOUBLE PRECISION NOT NULL,
                    failures INTEGER NOT NULL, locked_until DOUBLE PRECISION NOT NULL)
                """
            ]
        ),
    ]

    /// Tags and user names never contain a newline (NH's tag syntax), so one TEXT column holds a list.
    static func join(_ list: [String]) -> String { list.joined(separator: "\n") }
    static func split(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }
}
