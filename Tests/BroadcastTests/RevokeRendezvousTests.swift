import Foundation
import Kafka
import Synchronization
import Testing

@testable import Broadcast

/// The revoke callback blocks a thread (as librdkafka's poll thread) until the engine answers, or
/// until its limit: then the partitions go uncommitted, and that is reported, not silent.
@Suite struct RevokeRendezvousTests {
    /// What a rendezvous reported, through the hooks it was made with.
    final class Heard: Sendable {
        let gaveUp = Mutex<[[TopicPartition]]>([])
        let late = Mutex<[[TopicPartitionOffset]]>([])

        func rendezvous(timeout: Duration) -> RevokeRendezvous {
            RevokeRendezvous(
                timeout: timeout,
                gaveUp: { p in self.gaveUp.withLock { $0.append(p) } },
                answeredLate: { o in self.late.withLock { $0.append(o) } }
            )
        }
    }

    /// Runs `revoke` on a thread of its own and returns what it returned.
    func revoke(
        _ rendezvous: RevokeRendezvous,
        _ partitions: [TopicPartition],
        posted: @escaping @Sendable (Int) -> Void
    ) async -> [TopicPartitionOffset] {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: rendezvous.revoke(partitions, post: posted)) }.start()
        }
    }

    @Test func anAnswerInTimeIsWhatTheConsumerCommits() async {
        let heard = Heard()
        let rendezvous = heard.rendezvous(timeout: .seconds(60))
        let offsets = await revoke(rendezvous, [p0]) { id in
            rendezvous.complete(id, commit: [TopicPartitionOffset(p0, offset: 7)])
        }
        #expect(offsets == [TopicPartitionOffset(p0, offset: 7)])
        #expect(heard.gaveUp.withLock { $0 }.isEmpty)
        #expect(heard.late.withLock { $0 }.isEmpty)
    }

    @Test func aRevokeNotAnsweredInTimeIsReportedAndItsLateAnswerNamesTheOffsetsGivenUp() async throws {
        let heard = Heard()
        let rendezvous = heard.rendezvous(timeout: .milliseconds(10))
        let id = Mutex<Int?>(nil)
        let offsets = await revoke(rendezvous, [p0, p1]) { posted in id.withLock { $0 = posted } }
        #expect(offsets == [], "nothing is committed for a revoke given up")
        #expect(heard.gaveUp.withLock { $0 } == [[p0, p1]])
        let posted = try #require(id.withLock { $0 })
        rendezvous.complete(posted, commit: [TopicPartitionOffset(p0, offset: 3)])
        #expect(heard.late.withLock { $0 } == [[TopicPartitionOffset(p0, offset: 3)]])
        // Answered once: a second completion of the same revoke reports nothing more.
        rendezvous.complete(posted, commit: [TopicPartitionOffset(p0, offset: 3)])
        #expect(heard.late.withLock { $0 }.count == 1)
    }

    @Test func afterTheRunRevokesGetWhatItLeftUncommitted() async {
        let rendezvous = RevokeRendezvous(timeout: .seconds(60))
        rendezvous.close(leftover: [TopicPartitionOffset(p1, offset: 2)])
        let offsets = await revoke(rendezvous, [p1]) { _ in Issue.record("nobody is left to answer") }
        #expect(offsets == [TopicPartitionOffset(p1, offset: 2)])
    }
}
