import Foundation
import HubEmulator
import Logging
import NotificationHubs
import Synchronization

/// An emulator served on a free loopback port for the duration of a test.
final class LiveEmulator: Sendable {
    let emulator: NotificationHubEmulator
    let port: Int
    private let task: Task<Void, any Error>

    init(_ configuration: NotificationHubEmulator.Configuration = .init()) async throws {
        let emulator = NotificationHubEmulator(configuration: configuration)
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let server = EmulatorServer(emulator: emulator, port: 0, logger: Logger(label: "emulator")) {
            continuation.yield($0)
        }
        task = Task { try await server.run() }
        var iterator = stream.makeAsyncIterator()
        port = await iterator.next() ?? 0
        self.emulator = emulator
    }

    deinit { task.cancel() }

    var baseURL: String { "http://127.0.0.1:\(port)/" }

    func connectionString(_ keyName: String = "DefaultFullSharedAccessSignature") -> String {
        emulator.configuration.policy.connectionString(keyName: keyName, host: "127.0.0.1", port: port) ?? ""
    }

    /// The project's own client, as an application would use it.
    func client(
        _ keyName: String = "DefaultFullSharedAccessSignature",
        hub: String = "breaking",
        attempts: Int = 3
    ) throws -> NotificationHubClient {
        var config = NotificationHubConfiguration(
            connection: try ConnectionString(parsing: connectionString(keyName)),
            hubName: hub
        )
        config.retry = RetryPolicy(maxAttempts: attempts, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5))
        // A guard, not a measure: the emulator runs in this test process, whose two cooperative
        // threads the rest of the suite keeps busy; a 5 s timeout turned that into extra attempts.
        config.requestTimeout = .seconds(60)
        return NotificationHubClient(
            configuration: config,
            transport: CurlTransport(logger: Logger(label: "client")),
            logger: Logger(label: "client")
        )
    }

    /// `GET /_emulator/deliveries`, parsed.
    func deliveries() async throws -> [[String: Any]] {
        let (data, _) = try await get("_emulator/deliveries")
        let json = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        return json?["deliveries"] as? [[String: Any]] ?? []
    }

    /// A request to the hub `breaking` with the full key's SAS token, as a client library sends it.
    func call(
        _ method: HTTPRequest.Method,
        _ path: String,
        headers: [HTTPHeader] = [],
        body: String = ""
    ) async throws -> HTTPResponse {
        let client = try client()
        let token = client.tokens.token(for: client.configuration.resourceURI)
        let request = HTTPRequest(
            method: method,
            url: baseURL + "breaking/" + path,
            headers: headers + [HTTPHeader("Authorization", token.header)],
            body: Array(body.utf8)
        )
        return try await CurlTransport(logger: Logger(label: "t")).send(request)
    }

    func get(_ path: String) async throws -> (Data, Int) {
        let response = try await CurlTransport(logger: Logger(label: "t")).send(
            HTTPRequest(method: .get, url: baseURL + path)
        )
        return (Data(response.body), response.status)
    }
}
