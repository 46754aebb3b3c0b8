import Broadcast
import Foundation
import Health
import Hummingbird
import HummingbirdTesting
import Kafka
import OperationsEndpoint
import Synchronization
import Testing

/// The HTTP layer over a real monitor, driven in process; and the adapters that feed the monitor.
@Suite struct OperationsEndpointTests {
    static func app(
        _ health: HealthMonitor,
        exposition: @escaping @Sendable () -> [UInt8] = { Array("x_total 1\n".utf8) }
    ) -> some ApplicationProtocol {
        Application(router: OperationsServer.router(health: health, exposition: exposition))
    }

    static func body(_ response: TestResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:]
    }

    /// A poll loop that turns between any two looks, however slowly the test runs: these tests are
    /// about the other checks, not about a stalled loop.
    static func turning() -> @Sendable () -> UInt64 {
        let turns = Atomic<UInt64>(0)
        return { turns.add(1, ordering: .relaxed).newValue }
    }

    @Test func probesAnswer200WithTheirChecksAnd503WithTheReason() async throws {
        var config = HealthState.Configuration(consumes: true)
        config.dependencies = ["store"]
        let health = HealthMonitor(configuration: config, pollTurns: Self.turning())
        health.dependencyAnswered("store")
        try await Self.app(health).test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok)
                #expect(Self.body(response)["healthy"] as? Bool == true)
            }
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json")
            }
            health.dependencyFailed("store", reason: "connection refused")
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let body = Self.body(response)
                #expect(body["healthy"] as? Bool == false)
                #expect(body["reasons"] as? [String] == ["store: not answering: connection refused"])
                let store = (body["checks"] as? [String: Any])?["store"] as? [String: Any]
                #expect(store?["passed"] as? Bool == false)
            }
            health.dependencyAnswered("store")
            // The hub's outage is said, and decides nothing: not the process's death, nor a reason
            // to hold a rollout or a drain.
            health.hubUnavailable(reason: "connection refused")
            for probe in ["/healthz", "/readyz"] {
                try await client.execute(uri: probe, method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(Self.body(response)["notes"] as? [String] == ["hub: unavailable: connection refused"])
                }
            }
        }
    }

    @Test func metricsAreThePrometheusExposition() async throws {
        try await Self.app(.serverOnly()).test(.router) { client in
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
                #expect(String(buffer: response.body) == "x_total 1\n")
            }
        }
    }

    @Test func rebalancesReachTheMonitorAndThePipelineAlike() throws {
        let health = HealthMonitor(configuration: .init(consumes: true), pollTurns: Self.turning())
        let base = ScriptedSource()
        let watched = health.watching(base)
        let seen = Mutex<[TopicPartition]>([])
        watched.setRebalanceHandlers(
            RebalanceHandlers(
                onAssign: { p in seen.withLock { $0 += p } },
                onRevoke: { p in [TopicPartitionOffset(p[0], offset: 7)] }
            )
        )
        let partition = TopicPartition(topic: "news.world", partition: 0)
        base.handlers.withLock { $0 }?.onAssign([])
        #expect(health.readiness().healthy, "assigned nothing: idle, and ready")
        #expect(health.readiness().checks.first { $0.name == "partitions" }?.detail.hasPrefix("none assigned") == true)
        base.handlers.withLock { $0 }?.onAssign([partition])
        #expect(health.readiness().healthy)
        #expect(seen.withLock { $0 } == [partition])
        let offsets = base.handlers.withLock { $0 }?.onRevoke([partition])
        #expect(
            offsets == [TopicPartitionOffset(partition, offset: 7)],
            "the pipeline's offsets are what the consumer commits"
        )
        #expect(health.readiness().healthy, "joining again")
    }

    @Test func aDeadLetterSinkThatFailsMakesTheProcessUnreadyUntilAWriteSucceeds() async throws {
        let health = HealthMonitor(configuration: .init(consumes: true), pollTurns: Self.turning())
        let base = FlakySink()
        let sink = health.watching(base)
        let record = DeadLetterRecord(
            reason: "invalid",
            error: "x",
            message: Array("{}".utf8),
            source: KafkaMessage(topic: "news.world", partition: 0, offset: 1, value: Array("{}".utf8))
        )
        base.failing.withLock { $0 = true }
        await #expect(throws: POSIXError.self) { try await sink.write(record) }
        let verdict = health.readiness()
        #expect(verdict.reasons == ["deadLetters: write failed: No space left on device"])
        base.failing.withLock { $0 = false }
        try await sink.write(record)
        #expect(health.readiness().healthy)
    }
}

final class ScriptedSource: RecordSource {
    let handlers = Mutex<RebalanceHandlers?>(nil)
    func setRebalanceHandlers(_ handlers: RebalanceHandlers) { self.handlers.withLock { $0 = handlers } }
    func nextBatch(max: Int, timeout: Duration) async -> SourceBatch { .finished }
    func takeReady(max: Int) -> [KafkaMessage] { [] }
    func commit(_ offsets: [TopicPartitionOffset]) async throws {}
    var lag: Int64 { 0 }
    func pause(_ partitions: [TopicPartition]) {}
    func resume(_ partitions: [TopicPartition]) {}
}

final class FlakySink: DeadLetterSink {
    let failing = Mutex(false)
    func write(_ record: DeadLetterRecord) async throws {
        if failing.withLock({ $0 }) { throw POSIXError(.ENOSPC) }
    }
    func flush() async throws {}
}
