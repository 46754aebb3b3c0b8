import Foundation

/// A throw-away PostgreSQL server from Debian's `postgresql` package on 127.0.0.1 and a free port:
/// a fresh data folder, trust authentication on loopback only, removed at `stop()`. PostgreSQL
/// refuses to run as root, so when the tests are root it runs as the `postgres` user.
public final class PostgresServer: @unchecked Sendable {
    public let port: Int
    public let dataDirectory: URL
    public let user = "hubcast"
    public let database = "hubcast"
    private let process: Process
    private let binDirectory: String
    /// The server's own output, for the error when it does not start.
    private let logFile: URL

    public init() async throws {
        binDirectory = try Self.findBinaries()
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("hubcast-pg-\(UUID().uuidString)")
        logFile = dataDirectory.appendingPathExtension("log")
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        let asRoot = getuid() == 0
        if asRoot { _ = try await ChildProcess.run("chown", ["postgres:postgres", dataDirectory.path]) }
        let initdb = try await Self.run(
            asRoot,
            binDirectory + "/initdb",
            ["-D", dataDirectory.path, "-U", user, "--auth=trust", "-E", "UTF8", "--no-sync"]
        )
        guard initdb.status == 0 else { throw Failed(description: "initdb failed: \(initdb.stderr)") }

        // A port found free can be taken by another test's server before the postmaster binds it:
        // then it exits at once, and it is started again on another port.
        var started: (process: Process, port: Int)?
        for _ in 0..<3 where started == nil {
            started = try await Self.start(binDirectory, dataDirectory, user: user, asRoot: asRoot, log: logFile)
        }
        guard let started else {
            let log = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: dataDirectory)
            try? FileManager.default.removeItem(at: logFile)
            throw Failed(description: "PostgreSQL did not start: \(log.suffix(1500))")
        }
        (process, port) = started
        let created = try await ChildProcess.run(
            binDirectory + "/createdb",
            ["-h", "127.0.0.1", "-p", String(port), "-U", user, database]
        )
        guard created.status == 0 else {
            stop()
            throw Failed(description: "createdb failed: \(created.stderr)")
        }
    }

    /// Starts the postmaster on a free port and waits until it accepts a connection; nil when it
    /// exited first (its output is in `log`).
    private static func start(
        _ binDirectory: String,
        _ dataDirectory: URL,
        user: String,
        asRoot: Bool,
        log: URL
    ) async throws -> (Process, Int)? {
        let port = freeLoopbackPort()
        let process = Process()
        process.executableURL = URL(
            fileURLWithPath: asRoot ? try ChildProcess.which("runuser") : binDirectory + "/postgres"
        )
        let serverArguments = [
            "-D", dataDirectory.path, "-p", String(port), "-k", dataDirectory.path, "-c", "listen_addresses=127.0.0.1",
            "-c", "fsync=off", "-c", "max_connections=100",
        ]
        process.arguments =
            asRoot ? ["-u", "postgres", "--", binDirectory + "/postgres"] + serverArguments : serverArguments
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let output = try FileHandle(forWritingTo: log)
        defer { try? output.close() }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = output
        try process.run()
        // Ready when it accepts a connection: pg_isready answers at once either way. The bound is
        // a guard for a machine busy with every other suite's start.
        let ready = try await poll(every: .milliseconds(100), timeout: .seconds(180)) { () async throws -> Bool? in
            let answer = try await ChildProcess.run(
                binDirectory + "/pg_isready",
                ["-h", "127.0.0.1", "-p", String(port), "-U", user]
            )
            return answer.status == 0 ? true : (process.isRunning ? nil : false)
        }
        if ready == true { return (process, port) }
        if process.isRunning {
            shutDown(process, binDirectory, dataDirectory)
            throw Failed(description: "PostgreSQL did not accept a connection in 180 s")
        }
        process.reap()
        return nil
    }

    /// `postgres://hubcast@127.0.0.1:<port>/hubcast?sslmode=disable`.
    public var url: String { "postgres://\(user)@127.0.0.1:\(port)/\(database)?sslmode=disable" }

    /// Fast shutdown, then the data folder goes.
    public func stop() {
        Self.shutDown(process, binDirectory, dataDirectory)
        try? FileManager.default.removeItem(at: dataDirectory)
        try? FileManager.default.removeItem(at: logFile)
    }

    private static func shutDown(_ process: Process, _ binDirectory: String, _ dataDirectory: URL) {
        guard process.isRunning else { return }
        // pg_ctl as the server's own user: a signal to `runuser` would not reach the postmaster.
        let ctl = Process()
        let pgCtl = binDirectory + "/pg_ctl"
        let arguments = ["stop", "-D", dataDirectory.path, "-m", "fast", "-w"]
        if getuid() == 0 {
            ctl.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            ctl.arguments = ["-u", "postgres", "--", pgCtl] + arguments
        } else {
            ctl.executableURL = URL(fileURLWithPath: pgCtl)
            ctl.arguments = arguments
        }
        ctl.standardOutput = FileHandle.nullDevice
        ctl.standardError = FileHandle.nullDevice
        if (try? ctl.run()) != nil { ctl.reap(killAfter: .seconds(60)) }
        process.reap()
    }

    deinit { stop() }

    private static func run(
        _ asRoot: Bool,
        _ executable: String,
        _ arguments: [String]
    ) async throws -> HubcastBinary.Result {
        asRoot
            ? try await ChildProcess.run("runuser", ["-u", "postgres", "--", executable] + arguments)
            : try await ChildProcess.run(executable, arguments)
    }

    private static func findBinaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init)
            .sorted()
        guard let version = versions.last,
            FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/postgres")
        else {
            throw Failed(description: "PostgreSQL is not installed: run `make setup` (Debian's postgresql package)")
        }
        return "\(root)/\(version)/bin"
    }

    public struct Failed: Error, CustomStringConvertible {
        public let description: String
    }
}
