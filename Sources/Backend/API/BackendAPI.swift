import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import News
import NotificationHubs
import Synchronization

/// The seeds' API (001 secure push, 002 register from the backend, 003 notify users), each call
/// authenticated, each registration owned, each payload shown only to its audience.
public struct BackendAPI: Sendable {
    public struct Configuration: Sendable {
        /// Tags a client may put on its registration (default: the six categories).
        public var allowedTags: [String]
        /// The category topic the backend's own notifications go to by default.
        public var notifyCategory: String
        /// Categories a sender may pick with `?category=` (each has a topic).
        public var categories: [String] = Categories.seedNames
        /// Largest request body.
        public var maxBodyBytes = 64 * 1024
        /// A secure payload without `expiresAt` lives this long (default 7 days).
        public var payloadTTL: Int64 = 7 * 24 * 3600
        /// Accept Basic over plain http from other hosts (behind a TLS-terminating proxy).
        public var allowPlainHTTP = false
        /// Proxies whose `X-Forwarded-For` and `X-Forwarded-Proto` are believed.
        public var trustedProxies = TrustedProxies()
        /// The server itself speaks TLS.
        public var tls = false

        public init(allowedTags: [String] = Categories.seedNames, notifyCategory: String = Categories.seedNames[0]) {
            self.allowedTags = allowedTags
            self.notifyCategory = notifyCategory
        }
    }

    let configuration: Configuration
    let store: any BackendStore
    let hub: any DeviceHub
    let publisher: any ItemPublisher
    let authenticator: Authenticator
    let tagPolicy: TagPolicy
    let logger: Logger
    let now: @Sendable () -> Int64
    /// Older platform names clients sent (`fcm`, `gcm`), each logged once per process.
    let olderPlatformNames = FirstSight()

    public init(
        configuration: Configuration,
        store: any BackendStore,
        hub: any DeviceHub,
        publisher: any ItemPublisher,
        authenticator: Authenticator,
        logger: Logger,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        self.configuration = configuration
        self.store = store
        self.hub = hub
        self.publisher = publisher
        self.authenticator = authenticator
        self.tagPolicy = TagPolicy(allowed: configuration.allowedTags)
        self.logger = logger
        self.now = now
    }

    /// Every route, behind the JSON error middleware.
    public func router() -> Router<BackendRequestContext> {
        let router = Router(context: BackendRequestContext.self)
        // Outermost: it counts each request by route, method and the status the client got.
        router.add(middleware: MetricsMiddleware())
        router.add(middleware: JSONErrorMiddleware())
        router.get("/healthz") { _, _ in Self.json(["status": .string("ok")]) }
        router.get("/readyz") { _, _ in try await self.ready() }
        router.post("/api/register") { request, context in
            let caller = try await self.authenticate(request, context)
            return try await self.createRegistrationID(
                caller: caller,
                handle: request.uri.queryParameters.get("handle")
            )
        }
        router.put("/api/register/:id") { request, context in
            let caller = try await self.authenticate(request, context)
            var request = request
            let body = try await self.body(&request)
            return try await self.upsertRegistration(caller: caller, id: context.parameters.get("id") ?? "", body: body)
        }
        router.delete("/api/register/:id") { request, context in
            let caller = try await self.authenticate(request, context)
            return try await self.deleteRegistration(caller: caller, id: context.parameters.get("id") ?? "")
        }
        router.post("/api/notifications") { request, context in
            let caller = try await self.authenticate(request, context)
            var request = request
            let body = try await self.body(&request)
            let query = request.uri.queryParameters
            return try await self.notify(
                caller: caller,
                to: query.get("to_tag"),
                pns: query.get("pns"),
                secureFlag: query.get("secure"),
                category: query.get("category"),
                contentType: request.headers[.contentType],
                body: body
            )
        }
        router.get("/api/notifications/:id") { request, context in
            let caller = try await self.authenticate(request, context)
            return try await self.securePayload(caller: caller, id: context.parameters.get("id") ?? "")
        }
        // A known path with another method is 405 naming the ones it has, not 404.
        let methods: KeyValuePairs<String, [HTTPRequest.Method]> = [
            "/healthz": [.get], "/readyz": [.get], "/api/register": [.post], "/api/register/:id": [.put, .delete],
            "/api/notifications": [.post], "/api/notifications/:id": [.get],
        ]
        for (path, allowed) in methods {
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            for method in [HTTPRequest.Method.get, .post, .put, .delete, .patch] where !allowed.contains(method) {
                router.on(RouterPath(path), method: method) { _, _ -> Response in
                    throw APIError(
                        .methodNotAllowed,
                        "\(method.rawValue) is not allowed here; allowed: \(allow)",
                        headers: [.allow: allow]
                    )
                }
            }
        }
        return router
    }

    // MARK: Plumbing shared by the handlers

    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!

    func authenticate(_ request: Request, _ context: BackendRequestContext) async throws(APIError) -> Principal {
        let forwardedFor = request.headers[values: Self.forwardedFor]
        let forwardedProto = request.headers[values: Self.forwardedProto]
        let origin = configuration.trustedProxies.origin(
            peer: context.clientAddress,
            forwardedFor: forwardedFor,
            forwardedProto: forwardedProto
        )
        // Loopback is a client on this host, unless it relays someone else's request: a proxy on
        // the same host forwards from 127.0.0.1 whatever its clients sent, TLS or not, and only a
        // trusted proxy's word on the scheme counts.
        let relayed = !forwardedFor.isEmpty || !forwardedProto.isEmpty
        let plainAllowed =
            configuration.tls || configuration.allowPlainHTTP || origin.tls || (context.isLoopback && !relayed)
        do {
            return try await authenticator.authenticate(
                authorization: request.headers[.authorization],
                address: origin.address,
                plainHTTPAllowed: plainAllowed
            )
        } catch {
            switch error {
            case .unauthenticated:
                throw APIError(
                    .unauthorized,
                    "authentication required",
                    headers: [.wwwAuthenticate: #"Basic realm="hubcast", charset="UTF-8""#]
                )
            case .needsTLS:
                throw APIError(.unauthorized, "Basic authentication is accepted only over TLS")
            case .locked(let retryAfter):
                throw APIError(
                    .tooManyRequests,
                    "too many failed logins; try again later",
                    headers: [.retryAfter: String(retryAfter)]
                )
            }
        }
    }

    func body(_ request: inout Request) async throws -> [UInt8] {
        do {
            return Array(buffer: try await request.collectBody(upTo: configuration.maxBodyBytes))
        } catch is NIOTooManyBytesError {
            throw APIError(.contentTooLarge, "request body larger than \(configuration.maxBodyBytes) bytes")
        } catch {
            // A malformed chunk size, a body cut short: the request's framing, not its size.
            throw APIError.badRequest("the request body could not be read")
        }
    }

    /// Ready when the store answers. Not the hub: its outage is not this process's, and an unready
    /// fleet would only hold rollouts and node drains for its length (each probe would also have
    /// sent the hub a request).
    func ready() async throws -> Response {
        do {
            try await store.ping()
        } catch {
            logger.warning("Store not reachable", metadata: ["error": "\(error.description)"])
            throw APIError.unavailable("store not reachable")
        }
        return Self.json(["status": .string("ready")])
    }

    static func json(_ members: [String: JSONText.Value], status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: JSONText.object(members)))
        )
    }

    static func empty() -> Response {
        Response(status: .ok, headers: [.contentLength: "0", .cacheControl: "no-store"])
    }

    /// Store failures are the operator's to read in the log, not the client's.
    func storeFailed(_ error: StoreError) -> APIError {
        logger.error("Store failed", metadata: ["error": "\(error.description)"])
        return APIError.unavailable("store unavailable")
    }

    func hubFailed(_ error: HubError) -> APIError {
        logger.error("Hub call failed", metadata: ["status": "\(error.status.map(String.init) ?? "none")"])
        return APIError(.badGateway, "the notification hub refused or did not answer")
    }

    static func handleHash(_ handle: String) -> String {
        SHA256.hash(data: Data(handle.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}

/// Says whether a name is seen for the first time in this process: a log line once per name.
final class FirstSight: Sendable {
    private let seen = Mutex<Set<String>>([])

    func first(_ name: String) -> Bool { seen.withLock { $0.insert(name).inserted } }
}
