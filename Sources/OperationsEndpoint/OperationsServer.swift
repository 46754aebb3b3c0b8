import Health
import Hummingbird
import Logging
import ServiceLifecycle

/// The process's one optional HTTP port for orchestrators (`--http-port`): `GET /healthz`
/// (alive), `GET /readyz` (able to work) and `GET /metrics` (Prometheus text). A thin layer: the
/// verdicts are `HealthMonitor`'s, the exposition is the caller's.
public struct OperationsServer: Service {
    let health: HealthMonitor
    let exposition: @Sendable () -> [UInt8]
    let host: String
    let port: Int
    let logger: Logger

    public init(
        health: HealthMonitor,
        host: String,
        port: Int,
        logger: Logger,
        exposition: @escaping @Sendable () -> [UInt8]
    ) {
        self.health = health
        self.exposition = exposition
        self.host = host
        self.port = port
        self.logger = logger
    }

    public func run() async throws {
        let app = Application(
            router: Self.router(health: health, exposition: exposition),
            configuration: .init(address: .hostname(host, port: port), serverName: "hubcast"),
            logger: logger
        )
        try await app.run()
    }

    /// The routes, apart from the server so tests can drive them in process.
    public static func router(
        health: HealthMonitor,
        exposition: @escaping @Sendable () -> [UInt8]
    ) -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/healthz") { _, _ in probe(health.liveness()) }
        router.get("/readyz") { _, _ in probe(health.readiness()) }
        router.get("/metrics") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: exposition()))
            )
        }
        return router
    }

    /// 200 when healthy, 503 otherwise, with the checks as JSON either way.
    static func probe(_ verdict: HealthState.Verdict) -> Response {
        Response(
            status: verdict.healthy ? .ok : .serviceUnavailable,
            headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: verdict.json + "\n"))
        )
    }
}
