import Benchmark
import Broadcast
import Foundation
import Logging
import Metrics
import News
import NotificationHubs
import Telemetry

// Each benchmark does its operation `scaledIterations` times per measurement, so the allocation
// counts read per operation; "mallocs per op = 0" is the target for the paths taken per send.

let item = Array(
    #"{"id":"2026-11-22-quake","headline":"Earthquake of magnitude 6.1 strikes off the coast","category":"World","url":"https://news.example/quake","publishedAt":"2026-11-22T08:00:00Z"}"#
        .utf8
)
let key = "c2VjcmV0LWtleS1mb3ItYmVuY2htYXJrcw=="
let connection = try! ConnectionString(
    parsing:
        "Endpoint=sb://bench.servicebus.windows.net/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=\(key)"
)
let resource = "https://bench.servicebus.windows.net/hub"

let metricsBackend: InMemoryMetrics = {
    let backend = InMemoryMetrics()
    MetricsSystem.bootstrap(backend)
    return backend
}()

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        scalingFactor: .kilo,
        // `make bench-quick` shortens every benchmark through HUBCAST_MICRO_SECONDS.
        maxDuration: .seconds(Int(ProcessInfo.processInfo.environment["HUBCAST_MICRO_SECONDS"] ?? "") ?? 3)
    )

    Benchmark("SAS token: cached") { benchmark in
        let tokens = TokenProvider(connection: connection)
        _ = tokens.token(for: resource)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(tokens.token(for: resource)) }
    }

    Benchmark("SAS token: minted") { benchmark in
        for i in benchmark.scaledIterations {
            blackHole(
                SASToken(resourceURI: resource, keyName: connection.keyName, key: key, expiry: 1_800_000_000 + Int64(i))
            )
        }
    }

    Benchmark("Tag expression: parse and validate") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try? TagExpression(parsing: "(World || Politics) && !muted && lang:en"))
        }
    }

    Benchmark("Tag expression: split a 60-tag OR list") { benchmark in
        let tags = (0..<60).map { "user:\($0)" }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(Audience(orOf: tags)) }
    }

    Benchmark("Template properties and body") { benchmark in
        let news = try NewsItemDecoder().decode(item)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(NotificationHubClient.templateBody(TemplateProperties.build(for: news, category: "World")))
        }
    }

    // The client's whole part of a send, with no socket: cached token, request, answer classified.
    Benchmark("Client: a template send over InMemoryTransport") { benchmark in
        let hub = NotificationHubClient(
            configuration: NotificationHubConfiguration(connection: connection, hubName: "hub"),
            transport: InMemoryTransport(status: 201),
            logger: Logger(label: "bench")
        )
        let properties = [("messageParam", "Earthquake of magnitude 6.1 strikes off the coast")]
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try? await hub.sendTemplate(properties: properties, tagExpression: "World"))
        }
    }

    Benchmark("NewsItem decode and validate") { benchmark in
        let decoder = NewsItemDecoder()
        for _ in benchmark.scaledIterations { blackHole(try? decoder.decode(item, topicCategory: "World")) }
    }

    Benchmark("Metrics: counter, meter and latency per send") { benchmark in
        _ = metricsBackend
        let metrics = PipelineMetrics(categories: ["World"])
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            metrics.sent.increment()
            metrics.inFlight.set(i & 63)
            metrics.sendLatency.recordNanoseconds(Int64(900_000 + i & 0xFFFF))
        }
    }

    // The same with /metrics served (`--http-port`): swift-metrics feeds swift-prometheus's registry too.
    Benchmark("Metrics: the same with Prometheus (--http-port)") { benchmark in
        let factory = MultiplexMetricsHandler(factories: [InMemoryMetrics(), PrometheusMetrics().factory])
        let sent = Counter(label: "hubcast_sent", factory: factory)
        let inFlight = Meter(label: "hubcast_in_flight", factory: factory)
        let sendLatency = Timer(label: "hubcast_send_latency", factory: factory)
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            sent.increment()
            inFlight.set(i & 63)
            sendLatency.recordNanoseconds(Int64(900_000 + i & 0xFFFF))
        }
    }
}
