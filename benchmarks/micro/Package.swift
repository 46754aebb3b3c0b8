// swift-tools-version:6.1
// Micro-benchmarks of hubcast's hot paths (ordo-one/benchmark): `make bench-micro`.
// A package of its own so that `make test` never builds the benchmark framework.
import Foundation
import PackageDescription

// A path dependency is named after its folder, which is whatever the clone was called.
let hubcast = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized
    .lastPathComponent

let package = Package(
    name: "hubcast-micro",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../.."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "HubcastMicro",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "News", package: hubcast),
                .product(name: "NotificationHubs", package: hubcast),
                .product(name: "Broadcast", package: hubcast),
                .product(name: "Telemetry", package: hubcast),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/HubcastMicro",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ]
)
