import Kafka
import News
import NotificationHubs
import Synchronization
import Testing

@testable import Broadcast

/// A send the hub accepted keeps its slot until the ledger has stored its record: a SIGKILL can
/// then repeat only the sends in flight, never one whose slot a newer send had already taken.
@Suite struct LedgerSlotTests {
    /// A ledger that stores nothing until the test says so, and logs each step in order.
    final class HeldLedger: DeliveryLedger {
        let log = Mutex<[String]>([])
        let pending = Mutex<[@Sendable () -> Void]>([])
        let (records, recordWriter) = AsyncStream.makeStream(of: String.self)

        func record(_ key: LedgerKey, source: TopicPartition, stored: @escaping @Sendable () -> Void) {
            log.withLock { $0.append("record \(key.itemID) \(key.platform) \(source)") }
            pending.withLock { $0.append(stored) }
            recordWriter.yield(key.itemID)
        }

        /// Stores every record written so far.
        func storeAll() {
            let stored = pending.withLock { pending in
                defer { pending.removeAll() }
                return pending
            }
            log.withLock { $0.append("stored \(stored.count)") }
            for callback in stored { callback() }
        }

        func recorded(for partitions: [TopicPartition]) -> [RecordedSend] { [] }
        func recordedAll() -> [RecordedSend] { [] }
        func flush(timeout: Duration) {}
        var unrecorded: Int { 0 }
    }

    let tests = FreshnessAndPriorityTests()

    func send(_ id: String) -> NewsSend {
        NewsSend(
            planned: PlannedSend(tagExpression: "World", properties: [("messageParam", "m")]),
            itemID: id,
            category: "World",
            source: tests.message(#"{"id":"\#(id)","headline":"h"}"#)
        )
    }

    @Test(arguments: SendPath.allCases) func anAcceptedSendEndsOnlyOnceItsRecordIsStored(path: SendPath) async throws {
        let ledger = HeldLedger()
        let sender = try tests.hubSender(InMemoryTransport(status: 201), ledger: ledger)
        let ended = Task {
            let outcome = await path.send(send("s"), through: sender)
            ledger.log.withLock { $0.append("ended") }
            return outcome
        }
        var records = ledger.records.makeAsyncIterator()
        #expect(await records.next() == "s")
        #expect(!ledger.log.withLock { $0 }.contains("ended"), "the send ended before its record was stored")
        ledger.storeAll()
        guard case .delivered = await ended.value else {
            Issue.record("an accepted send did not end as delivered")
            return
        }
        #expect(ledger.log.withLock { $0 } == ["record s template news.world[0]", "stored 1", "ended"])
    }

    @Test(arguments: SendPath.allCases) func aRefusedSendEndsWithoutARecord(path: SendPath) async throws {
        let ledger = HeldLedger()
        let sender = try tests.hubSender(InMemoryTransport(status: 400), ledger: ledger)
        guard case .failed(let record) = await path.send(send("r"), through: sender) else {
            Issue.record("a send refused 400 was not dead-lettered")
            return
        }
        #expect(record.reason == "bad-request")
        #expect(ledger.log.withLock { $0 }.isEmpty)
    }
}
