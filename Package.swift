// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "hubcast",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "hubcast", targets: ["hubcast"]),
        .library(name: "Kafka", targets: ["Kafka"]),
        .library(name: "News", targets: ["News"]),
        .library(name: "NotificationHubs", targets: ["NotificationHubs"]),
        .library(name: "Broadcast", targets: ["Broadcast"]),
        .library(name: "Telemetry", targets: ["Telemetry"]),
    ],
    // Every dependency at the exact version this product is built and tested with (Package.resolved is not
    // committed: the machines that build it hold their own copies of these packages). The image records
    // the whole resolved set, transitive packages included (deploy/image.sh).
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", exact: "1.35.2"),
        .package(url: "https://github.com/apple/swift-collections", exact: "1.6.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", exact: "2.0.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", exact: "0.2.0"),
        .package(url: "https://github.com/apple/swift-configuration", exact: "1.4.0"),
        .package(url: "https://github.com/apple/swift-system", exact: "1.8.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", exact: "2.5.0"),
        .package(url: "https://github.com/vapor/jwt-kit", exact: "5.8.0"),
        .package(url: "https://github.com/vapor/sqlite-nio", exact: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        .package(url: "https://github.com/jpsim/Yams", exact: "6.2.2"),
    ],
    targets: [
        // C seams: one system-library target per C library, nothing else calls C.
        .systemLibrary(
            name: "CRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),

        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),

        // A thread whose end can be waited for, for the C libraries' blocking loops.
        .target(name: "Threads", dependencies: [.product(name: "NIOConcurrencyHelpers", package: "swift-nio")]),
        // Kafka client on librdkafka: consumer, producer, dev broker (mock cluster).
        .target(
            name: "Kafka",
            dependencies: [
                "CRdKafka", "Threads",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Text formats several modules write or check: tag syntax, the JSON parser, JSON and RFC 3339 writers,
        // legible quoting of input in errors. No dependencies.
        .target(name: "TextFormats"),
        // Azure Notification Hubs: connection strings, SAS tokens, libcurl transport, tag
        // expressions, retry policy, the client.
        .target(
            name: "NotificationHubs",
            dependencies: [
                "CCurl", "COpenSSL", "TextFormats", "Threads",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The pipeline: from news items to planned sends, the worker pool, commits, dead letters.
        .target(
            name: "Broadcast",
            dependencies: [
                "News", "NotificationHubs", "Kafka", "Telemetry", "TextFormats",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The routes file of `run --routes`: which hub each category or tenant goes to, read with Yams.
        .target(
            name: "Routes",
            dependencies: ["Broadcast", "TextFormats", .product(name: "Yams", package: "Yams")]
        ),
        // A local Notification Hubs: in-memory store, tag routing, templates, SAS, faults.
        .target(
            name: "HubEmulator",
            dependencies: [
                "News", "TextFormats", "NotificationHubs",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // swift-metrics back ends: in memory (HDR histograms) for the stdout JSON-lines printer, and
        // swift-prometheus's registry for /metrics.
        .target(
            name: "Telemetry",
            dependencies: [
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        // What the probes answer (alive, ready), from events the consumer, pipeline and sink report.
        .target(
            name: "Health",
            dependencies: [
                "Kafka", "Broadcast",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The optional HTTP port for orchestrators: /healthz, /readyz, /metrics. The only HTTP server
        // the pipeline's process runs.
        .target(
            name: "OperationsEndpoint",
            dependencies: [
                "Health",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // `hubcast replay`: dead-lettered sends re-sent through the same client.
        .target(
            name: "Replay",
            dependencies: [
                "Broadcast", "Kafka", "News", "NotificationHubs", "TextFormats",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // `hubcast demo`: the whole product on loopback, in one process.
        .target(
            name: "Demo",
            dependencies: [
                "Backend", "Broadcast", "HubEmulator", "Kafka", "News", "Newsroom", "NotificationHubs", "Telemetry",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // The news item: schema, decoding, validation, category ↔ topic mapping.
        .target(name: "News", dependencies: ["TextFormats"]),
        // Publishing news items to their category topics (`hubcast produce`).
        .target(
            name: "Newsroom",
            dependencies: [
                "Kafka", "News", "NotificationHubs",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `hubcast backend`: the app backend of seeds 001–003 (registrations, notify a user, secure
        // payloads), with real authentication and a SQLite or PostgreSQL store.
        .target(
            name: "Backend",
            dependencies: [
                "Kafka", "TextFormats", "News", "Newsroom", "NotificationHubs",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The CLI: parsing and wiring only.
        .executableTarget(
            name: "hubcast",
            dependencies: [
                "Kafka", "News", "Newsroom", "NotificationHubs", "Broadcast", "HubEmulator", "Telemetry", "Health",
                "OperationsEndpoint", "Demo", "Replay", "Backend", "TextFormats", "Routes",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),

        .testTarget(
            name: "NewsTests",
            dependencies: ["News", "TextFormats", "TestSupport"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "KafkaTests",
            dependencies: ["Kafka", "TestSupport", .product(name: "InMemoryLogging", package: "swift-log")]
        ),
        .testTarget(name: "ThreadsTests", dependencies: ["Threads"]),
        .testTarget(
            name: "HubEmulatorTests",
            dependencies: ["HubEmulator", "NotificationHubs", "News", "TestSupport"]
        ),
        .testTarget(
            name: "BroadcastTests",
            dependencies: [
                "Broadcast", "TextFormats", "Kafka", "News", "NotificationHubs", "Telemetry", "TestSupport", "Routes",
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .testTarget(
            name: "HealthTests",
            dependencies: [
                "Health", "OperationsEndpoint", "Broadcast", "Kafka",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
        .testTarget(
            name: "NotificationHubsTests",
            dependencies: ["NotificationHubs", "TextFormats", "News", "CCurl", "TestSupport"]
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["Kafka", "TextFormats", "News", "NotificationHubs", "HubEmulator", "TestSupport"],
            exclude: ["Help"]
        ),
        .testTarget(
            name: "BackendTests",
            dependencies: [
                "Backend", "NotificationHubs", "TestSupport",
                .product(name: "JWTKit", package: "jwt-kit"),
            ]
        ),
        // Starting and stopping the real servers (dev broker, emulator, nginx) for tests.
        .target(name: "TestSupport", dependencies: ["Kafka"], path: "Tests/TestSupport"),
    ],
    swiftLanguageModes: [.v6]
)
