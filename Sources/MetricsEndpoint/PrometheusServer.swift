import Telemetry
import Hummingbird
import Logging
import ServiceLifecycle

/// `GET /metrics` in Prometheus' text format, from the same in-memory metrics as the stdout lines.
public struct PrometheusServer: Service {
    let metrics: InMemoryMetrics
    let host: String
    let port: Int
    let logger: Logger

    public init(metrics: InMemoryMetrics, host: String, port: Int, logger: Logger) {
        self.metrics = metrics
        self.host = host
        self.port = port
        self.logger = logger
    }

    public func run() async throws {
        let router = Router()
        let metrics = self.metrics
        router.get("/metrics") { _, _ -> Response in
            let text = PrometheusText.render(metrics.snapshot(resettingIntervals: false))
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
        }
        let app = Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: "hubcast-metrics"),
                              logger: logger)
        try await app.run()
    }
}
