import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// The emulator on a Hummingbird HTTP/1.1 server: every request goes to `NotificationHubEmulator.handle`.
public struct EmulatorServer: Service {
    let emulator: NotificationHubEmulator
    let host: String
    let port: Int
    let logger: Logger
    let onRunning: @Sendable (Int) async -> Void

    /// `port` 0 picks a free one; `onRunning` gets the bound port once the server listens.
    public init(
        emulator: NotificationHubEmulator,
        host: String = "127.0.0.1",
        port: Int,
        logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) {
        self.emulator = emulator
        self.host = host
        self.port = port
        self.logger = logger
        self.onRunning = onRunning
    }

    public func run() async throws {
        let emulator = self.emulator
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            var request = request
            let body = try await request.collectBody(upTo: NotificationHubEmulator.maxBody + 1)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let answer = emulator.handle(
                EmulatorRequest(
                    method: request.method.rawValue,
                    path: request.uri.path,
                    query: request.uri.query ?? "",
                    headers: headers,
                    body: Array(buffer: body),
                    host: request.head.authority ?? headers["host"] ?? "127.0.0.1"
                )
            )
            if answer.latencyMs > 0 { try await Task.sleep(for: .milliseconds(answer.latencyMs)) }
            var fields = HTTPFields()
            for (name, value) in answer.headers {
                if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
            }
            if answer.drop { fields[DropConnectionHandler.marker] = "1" }
            return Response(
                status: .init(code: answer.drop ? 500 : answer.status),
                headers: fields,
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body))
            )
        }
        let onRunning = self.onRunning
        let app = Application(
            responder: responder,
            server: .http1(configuration: .init(additionalChannelHandlers: [DropConnectionHandler()])),
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: port),
                serverName: "hubcast-emulator"
            ),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        try await app.run()
    }
}
