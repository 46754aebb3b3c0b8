import Kafka
import News
import NotificationHubs
import Synchronization
import Testing

@testable import Broadcast

/// A send the hub accepted keeps its slot until the ledger has stored its record, unless fewer than
/// the allowance of ended sends' records are still being stored: a SIGKILL can then repeat only the
/// sends in flight and the allowance, never more.
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

    @Test(.timeLimit(.minutes(1)), arguments: SendPath.allCases)
    func anAcceptedSendEndsOnlyOnceItsRecordIsStored(path: SendPath) async throws {
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

    @Test(.timeLimit(.minutes(1)), arguments: SendPath.allCases)
    func sendsEndBeforeTheirRecordsAreStoredOnlyWithinTheAllowance(
        path: SendPath
    ) async throws {
        let ledger = HeldLedger()
        let sender = try tests.hubSender(InMemoryTransport(status: 201), ledger: ledger, recordsBehind: 1)
        var records = ledger.records.makeAsyncIterator()
        guard case .delivered = await path.send(send("a"), through: sender) else {
            Issue.record("the first accepted send did not end at once as delivered")
            return
        }
        #expect(await records.next() == "a")
        // The allowance is taken by a's record: b keeps its slot until the records are stored.
        let second = Task {
            let outcome = await path.send(send("b"), through: sender)
            ledger.log.withLock { $0.append("ended") }
            return outcome
        }
        #expect(await records.next() == "b")
        // b's record is handed over before b would end: had b ended too, two would be behind.
        #expect(sender.recordsBehindNow == 1, "a send ended past the allowance")
        #expect(!ledger.log.withLock { $0 }.contains("ended"), "a send ended past the allowance")
        ledger.storeAll()
        #expect(sender.recordsBehindNow == 0)
        guard case .delivered = await second.value else {
            Issue.record("the second accepted send did not end as delivered")
            return
        }
        // Both stored: the allowance is free again, and c ends at once.
        guard case .delivered = await path.send(send("c"), through: sender) else {
            Issue.record("the third accepted send did not end at once as delivered")
            return
        }
        #expect(
            ledger.log.withLock { $0 } == [
                "record a template news.world[0]", "record b template news.world[0]", "stored 2", "ended",
                "record c template news.world[0]",
            ]
        )
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
