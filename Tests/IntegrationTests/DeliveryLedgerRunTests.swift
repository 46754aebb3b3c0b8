import Foundation
import TestSupport
import Testing

/// The delivered-sends ledger through the real binary, the dev broker and the emulator: what the
/// hub accepted once is not sent again by another group reading the same items (as after a crash
/// before the commit), nor by a second replay of one dead-letter file.
@Suite(.serialized) struct DeliveryLedgerRunTests {
    @Test func itemsReadAgainAreNotSentAgainOnceTheHubAcceptedThem() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await h.produce(0..<200)
        let first = try await h.run(["--group", "first"])
        #expect(first.status == 0, "\(first.stderr.suffix(1500))")
        #expect(try PipelineHarness.metricsLines(first.stdout).last?["sent"] as? Int == 200)

        // Another group reads every item again from the start, as a restart before any commit would.
        let second = try await h.run(["--group", "second"])
        #expect(second.status == 0, "\(second.stderr.suffix(1500))")
        let last = try #require(try PipelineHarness.metricsLines(second.stdout).last)
        #expect(last["sent"] as? Int == 0, "\(second.stdout.suffix(1500))")
        #expect(last["deduplicated"] as? Int == 200, "\(second.stdout.suffix(1500))")
        #expect(second.stderr.contains("Read the delivered-sends ledger"), "\(second.stderr.suffix(1500))")
        #expect(try await h.acceptedSends() == 200)

        // Without the ledger the same items go again: it is the ledger that held them back.
        let unledgered = try await h.run(["--group", "third", "--ledger-topic", "none"])
        #expect(unledgered.status == 0, "\(unledgered.stderr.suffix(1500))")
        #expect(try PipelineHarness.metricsLines(unledgered.stdout).last?["sent"] as? Int == 200)
        #expect(try await h.acceptedSends() == 400)
    }

    @Test func aDeadLetterFileReplayedTwiceIsSentOnce() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await h.faults(#"{"status":400}"#)
        try await h.produce(0..<50)
        let failed = try await h.run(["--group", "failing", "--max-attempts", "2"])
        #expect(failed.status == 0, "\(failed.stderr.suffix(1500))")
        try await h.clearFaults()
        let file = ["--from", "file:" + h.dlq.path, "--ledger-topic", "hubcast.delivered"]

        let first = try await h.replay(file)
        #expect(first.status == 0, "\(first.stderr.suffix(1500))")
        #expect(first.stderr.contains("replay done: read 50, sent 50, skipped 0"), "\(first.stderr.suffix(1500))")
        let second = try await h.replay(file)
        #expect(second.status == 0, "\(second.stderr.suffix(1500))")
        #expect(second.stderr.contains("replay done: read 50, sent 0, skipped 50"), "\(second.stderr.suffix(1500))")
        #expect(try PipelineHarness.metricsLines(second.stdout).last?["deduplicated"] as? Int == 50)
        let delivered = try await h.deliveries()
        #expect(delivered.count == 50 && Set(delivered.map(\.headline)).count == 50)

        // From a file without a ledger topic the replay says that it may repeat sends, and does.
        let unledgered = try await h.replay(["--from", "file:" + h.dlq.path])
        #expect(unledgered.stderr.contains("No delivered-sends ledger"), "\(unledgered.stderr.suffix(1500))")
        #expect(unledgered.stderr.contains("replay done: read 50, sent 50"), "\(unledgered.stderr.suffix(1500))")
    }
}
