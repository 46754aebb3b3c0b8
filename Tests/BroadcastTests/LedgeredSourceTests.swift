import Kafka
import Synchronization
import Testing

@testable import Broadcast

/// The ledger sits in the rebalance path: partitions coming in are handed on only once their
/// recorded sends are known delivered; partitions going out wait for the ledger to be written
/// after the engine finished them, before their commit.
@Suite struct LedgeredSourceTests {
    final class Log: Sendable {
        let steps = Mutex<[String]>([])
        func add(_ step: String) { steps.withLock { $0.append(step) } }
        var all: [String] { steps.withLock { $0 } }
    }

    struct FakeLedger: DeliveryLedger {
        let log: Log
        let held: [RecordedSend]
        func record(_ key: LedgerKey, source: TopicPartition, stored: @escaping @Sendable () -> Void) {
            log.add("record \(key.itemID)")
            stored()
        }
        func recorded(for partitions: [TopicPartition]) -> [RecordedSend] {
            log.add("read \(partitions.map(\.description))")
            return held
        }
        func recordedAll() -> [RecordedSend] { held }
        func flush(timeout: Duration) { log.add("flush") }
        var unrecorded: Int { 0 }
    }

    final class FakeSource: RecordSource {
        let handlers = Mutex<RebalanceHandlers?>(nil)
        func setRebalanceHandlers(_ handlers: RebalanceHandlers) { self.handlers.withLock { $0 = handlers } }
        func nextBatch(max: Int, timeout: Duration) async -> SourceBatch { .finished }
        func takeReady(max: Int) -> [KafkaMessage] { [] }
        func commit(_ offsets: [TopicPartitionOffset]) async throws {}
        var lag: Int64 { 0 }
        func pause(_ partitions: [TopicPartition]) throws {}
        func resume(_ partitions: [TopicPartition]) throws {}
    }

    @Test func anAssignmentIsHandedOnOnlyOnceItsRecordedSendsAreKnown() throws {
        let log = Log()
        let key = LedgerKey(hub: "hub", itemID: "item-1", platform: "template", audience: "World")
        let delivered = DeliveredSends(clock: { 1_000 })
        let source = FakeSource()
        let ledgered = LedgeredSource(
            source,
            ledger: FakeLedger(log: log, held: [RecordedSend(processKey: key.processKey, at: 990)]),
            delivered: delivered
        )
        let world = TopicPartition(topic: "news.world", partition: 0)
        ledgered.setRebalanceHandlers(
            RebalanceHandlers(
                onAssign: { partitions in
                    log.add("assigned, item-1 \(delivered.contains(key.processKey) == .ledger ? "known" : "unknown")")
                },
                onRevoke: { partitions in
                    log.add("engine finished")
                    return [TopicPartitionOffset(world, offset: 7)]
                }
            )
        )
        let handlers = try #require(source.handlers.withLock { $0 })
        handlers.onAssign([world])
        let offsets = handlers.onRevoke([world])
        #expect(offsets == [TopicPartitionOffset(world, offset: 7)])
        #expect(log.all == ["read [\"news.world[0]\"]", "assigned, item-1 known", "engine finished", "flush"])
    }

    @Test func anEmptyAssignmentReadsNothing() throws {
        let log = Log()
        let source = FakeSource()
        LedgeredSource(source, ledger: FakeLedger(log: log, held: []), delivered: DeliveredSends())
            .setRebalanceHandlers(RebalanceHandlers(onAssign: { _ in log.add("assigned") }))
        try #require(source.handlers.withLock { $0 }).onAssign([])
        #expect(log.all == ["assigned"])
    }
}
