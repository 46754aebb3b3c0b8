import Foundation
import NotificationHubs
import TestSupport
import Testing

/// Where a backend keeps its state in a test.
enum StoreKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }
}

/// A dev broker, the emulator as the hub, a users file, and `hubcast backend` processes on free ports,
/// all children of the test, stopped at `stop()`.
final class BackendHarness: @unchecked Sendable {
    static let hub = "hubcast"
    static let users = [
        ("alice", "alice-secret-pw", [String]()), ("bob", "bob-secret-pw", []),
        ("carol", "carol-secret-pw", ["sender"]),
    ]
    static let jwtSecret = "hubcast-test-jwt-secret-0123456789abcdef"
    static let jwtIssuer = "https://id.example.test/"
    static let jwtAudience = "hubcast-backend"

    let broker: DevBrokerProcess
    let emulator: ServerProcess
    let postgres: PostgresServer?
    let directory: URL
    private(set) var backends: [ServerProcess] = []
    private(set) var pipeline: Process?

    init(store: StoreKind) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hubcast-backend-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        broker = try await DevBrokerProcess(partitions: 1)
        emulator = try await ServerProcess(
            HubcastBinary.path,
            ["emulator", "--hub", Self.hub, "--sample-payloads", "3", "--log-level", "warning"]
        )
        postgres = store == .postgres ? try await PostgresServer() : nil
        try Data(emulator.firstLine.utf8).write(to: directory.appendingPathComponent("connection-string"))
        try Data(Self.jwtSecret.utf8).write(to: directory.appendingPathComponent("jwt-secret"))
        for (name, password, roles) in Self.users {
            let result = try await HubcastBinary.run(
                ["backend", "add-user", "--users-file", usersFile, "--name", name, "--cost", "4"]
                    + roles.flatMap { ["--role", $0] },
                stdin: password + "\n"
            )
            #expect(result.status == 0, "add-user \(name): \(result.stderr)")
            #expect(!result.stdout.contains(password) && !result.stderr.contains(password))
        }
    }

    var usersFile: String { directory.appendingPathComponent("users").path }

    var storeLocation: String { postgres?.url ?? directory.appendingPathComponent("backend.sqlite").path }

    /// Starts one more backend on the shared store; returns its base URL.
    @discardableResult
    func startBackend(_ extra: [String] = []) async throws -> String {
        let server = try await ServerProcess(
            HubcastBinary.path,
            [
                "backend", "--port", "0", "--brokers", broker.bootstrap, "--hub", Self.hub,
                "--connection-string-file", directory.appendingPathComponent("connection-string").path,
                "--users-file", usersFile, "--store", storeLocation, "--log-level", "debug",
                "--jwt-secret-file", directory.appendingPathComponent("jwt-secret").path,
                "--jwt-issuer", Self.jwtIssuer, "--jwt-audience", Self.jwtAudience,
                "--group", "backend-\(UUID().uuidString)",
            ] + extra,
            timeout: .seconds(60)
        )
        backends.append(server)
        return server.firstLine
    }

    /// `hubcast run` in the background: the pipeline that turns the backend's items into hub sends.
    func startPipeline() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: HubcastBinary.path)
        process.arguments = [
            "run", "--brokers", broker.bootstrap, "--hub", Self.hub, "--group", "pipeline",
            "--connection-string-file", directory.appendingPathComponent("connection-string").path,
            "--dlq", "file:" + directory.appendingPathComponent("dlq.jsonl").path, "--metrics-interval", "60",
            "--log-level", "warning",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        pipeline = process
    }

    func stop() {
        if let pipeline, pipeline.isRunning {
            pipeline.terminate()
            pipeline.reap()
        }
        for backend in backends { backend.stop() }
        emulator.stop()
        broker.stop()
        postgres?.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Everything every backend wrote to stderr.
    var logs: String { backends.map(\.stderr).joined(separator: "\n") }

    static func basic(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    static func basic(_ user: String) -> String {
        basic(user, users.first { $0.0 == user }?.1 ?? "")
    }

    // MARK: The emulator, read directly

    var emulatorBase: String { (try? ConnectionString(parsing: emulator.firstLine).baseURL) ?? "" }

    /// `GET /{hub}/registrations/{id}` with a full-access SAS token: its HTTP status and body.
    func hubRegistration(_ id: String) async throws -> (status: Int, body: String) {
        let connection = try ConnectionString(parsing: emulator.firstLine)
        let key = try #require(emulator.firstLine.split(separator: ";").first { $0.hasPrefix("SharedAccessKey=") })
            .dropFirst("SharedAccessKey=".count)
        let token = SASToken(
            resourceURI: connection.baseURL + Self.hub,
            keyName: connection.keyName,
            key: String(key),
            expiry: Int64(Date().timeIntervalSince1970) + 600
        ).header
        let answer = try await HTTP.call(
            "GET",
            connection.baseURL + Self.hub + "/registrations/\(id)?api-version=2015-01",
            headers: ["Authorization: \(token)"]
        )
        return (answer.status, answer.body)
    }

    /// The emulator's deliveries: tag expression, devices matched, sample payloads.
    func deliveries() async throws -> [(tags: String, matched: Int, payloads: [String])] {
        let answer = try await HTTP.call("GET", emulatorBase + "_emulator/deliveries")
        let json = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
        return (json?["deliveries"] as? [[String: Any]] ?? []).map {
            ($0["tagExpression"] as? String ?? "", $0["matched"] as? Int ?? -1, $0["payloads"] as? [String] ?? [])
        }
    }

    /// Waits (a generous guard, not a timing assumption) until a delivery satisfies `matches`.
    func waitForDelivery(
        timeout: Duration = .seconds(120),
        _ matches: @escaping ((tags: String, matched: Int, payloads: [String])) -> Bool
    )
        async throws -> (tags: String, matched: Int, payloads: [String])?
    {
        try await poll(every: .milliseconds(100), timeout: timeout) { try await deliveries().first(where: matches) }
    }
}

/// One HTTP exchange through curl: status, headers (lower-cased names), body.
struct HTTP {
    struct Answer {
        let status: Int
        let headers: [String: String]
        let body: String

        var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] }
        var errorMessage: String? { json?["error"] as? String }
    }

    static func call(
        _ method: String,
        _ url: String,
        auth: String? = nil,
        body: String? = nil,
        headers: [String] = [],
        cacert: String? = nil
    ) async throws -> Answer {
        var arguments = ["-s", "-i", "-X", method, "--max-time", "60"]
        if let cacert { arguments += ["--cacert", cacert] }
        if let auth { arguments += ["-H", "Authorization: \(auth)"] }
        for header in headers { arguments += ["-H", header] }
        if body != nil { arguments += ["--data-binary", "@-"] }
        arguments.append(url)
        let result = try await ChildProcess.run("curl", arguments, stdin: body, timeout: .seconds(90))
        guard result.status == 0 else {
            throw CurlFailed(description: "curl \(method) \(url): exit \(result.status) \(result.stderr)")
        }
        // A 100 Continue comes first on large bodies: the last header block is the answer's.
        var text = Substring(result.stdout)
        while text.hasPrefix("HTTP/1.1 100") || text.hasPrefix("HTTP/2 100"), let end = text.range(of: "\r\n\r\n") {
            text = text[end.upperBound...]
        }
        let split = text.range(of: "\r\n\r\n")
        let head = split.map { text[..<$0.lowerBound] } ?? text
        let body = split.map { String(text[$0.upperBound...]) } ?? ""
        let lines = head.split(separator: "\r\n")
        let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Answer(status: status, headers: fields, body: body)
    }

    struct CurlFailed: Error, CustomStringConvertible {
        let description: String
    }
}
