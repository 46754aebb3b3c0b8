import Backend
import Foundation
import Logging
import News
import Newsroom
import NotificationHubs

/// The demo's backend step (seeds 001–003): a reader registers a device through `hubcast backend`'s
/// API, the newsdesk (a `sender`) sends them a personal notification and a secure one, and the reader
/// fetches the secure payload with their credentials; every call over HTTP with Basic auth.
struct DemoBackendStep: Sendable {
    struct Outcome: Sendable {
        var registrationID: String?
        var personalSent = false
        var secureID: String?
        var fetchedPayload: String?
        var problem: String?

        static let securePayload = "Your demo subscription code is 4711"
        var succeeded: Bool { registrationID != nil && personalSent && fetchedPayload == Self.securePayload }
    }

    static let reader = "demo-reader"
    static let newsdesk = "newsdesk"
    /// Items the step publishes: one personal, one secure.
    static let items = 2

    let baseURL: String
    let readerPassword: String
    let newsdeskPassword: String

    /// The backend, in this process on a free loopback port, on a SQLite file in `directory`.
    static func start(
        directory: URL,
        publisher: NewsPublisher,
        hub: NotificationHubClient,
        logger: Logger
    )
        async throws -> (DemoBackendStep, Task<Void, Never>)
    {
        let readerPassword = UUID().uuidString, newsdeskPassword = UUID().uuidString
        var users = UsersFile()
        try users.set(name: reader, password: readerPassword, roles: [], cost: 10)
        try users.set(name: newsdesk, password: newsdeskPassword, roles: [Principal.senderRole], cost: 10)
        let opened = try await OpenedStore.open(
            location: directory.appendingPathComponent("backend.sqlite").path,
            password: nil,
            logger: logger
        )
        let api = BackendAPI(
            configuration: BackendAPI.Configuration(),
            store: opened.store,
            hub: NotificationHubDevices(client: hub),
            publisher: publisher,
            authenticator: Authenticator(users: users, bearer: nil),
            logger: logger
        )
        let (ports, portReady) = AsyncStream<Int>.makeStream()
        let server = try BackendServer(api: api, host: "127.0.0.1", port: 0, tls: nil, logger: logger) {
            portReady.yield($0)
        }
        let task = Task {
            // sqlite-nio requires its connection closed before it goes, however the server ended.
            do { try await server.run() } catch {}
            await opened.store.close()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else { throw DemoError("the backend did not start") }
        return (
            DemoBackendStep(
                baseURL: "http://127.0.0.1:\(port)",
                readerPassword: readerPassword,
                newsdeskPassword: newsdeskPassword
            ), task
        )
    }

    /// The seeds' client calls, in their order.
    func run(logger: Logger) async -> Outcome {
        var outcome = Outcome()
        let http = CurlTransport(logger: logger)
        defer { http.shutdown() }
        let token = String(repeating: "D3E0", count: 16)
        let reader = Self.basic(Self.reader, readerPassword), desk = Self.basic(Self.newsdesk, newsdeskPassword)
        do {
            let created = try await call(http, .post, "/api/register?handle=\(token)", reader)
            guard created.status == 200 else { throw DemoError("register: HTTP \(created.status)") }
            let id = String(decoding: created.body, as: UTF8.self).trimmingCharacters(
                in: CharacterSet(charactersIn: "\"")
            )
            let body = #"{"Platform":"apns","Handle":"\#(token)","Tags":["World"]}"#
            let put = try await call(http, .put, "/api/register/\(id)", reader, body: body)
            guard put.status == 200 else { throw DemoError("update registration: HTTP \(put.status)") }
            outcome.registrationID = id
            let personal = try await call(
                http,
                .post,
                "/api/notifications?pns=apns&to_tag=\(Self.reader)",
                desk,
                body: #""Welcome to breaking news""#
            )
            guard personal.status == 200 else { throw DemoError("notify: HTTP \(personal.status)") }
            outcome.personalSent = true
            let secure = try await call(
                http,
                .post,
                "/api/notifications?to_tag=\(Self.reader)&secure=true",
                desk,
                body: #"{"message":"\#(Outcome.securePayload)"}"#
            )
            let secureID =
                (try? JSONSerialization.jsonObject(with: Data(secure.body)) as? [String: Any])?["id"] as? String
            guard secure.status == 200, let secureID else { throw DemoError("secure notify: HTTP \(secure.status)") }
            outcome.secureID = secureID
            let fetched = try await call(http, .get, "/api/notifications/\(secureID)", reader)
            outcome.fetchedPayload =
                (try? JSONSerialization.jsonObject(with: Data(fetched.body)) as? [String: Any])?["Payload"] as? String
        } catch {
            outcome.problem = "\(error)"
        }
        return outcome
    }

    private func call(
        _ http: CurlTransport,
        _ method: HTTPRequest.Method,
        _ path: String,
        _ auth: String,
        body: String? = nil
    ) async throws -> HTTPResponse {
        var headers = [HTTPHeader("Authorization", auth)]
        if body != nil { headers.append(HTTPHeader("Content-Type", "application/json")) }
        return try await http.send(
            HTTPRequest(method: method, url: baseURL + path, headers: headers, body: Array((body ?? "").utf8))
        )
    }

    private static func basic(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }
}
