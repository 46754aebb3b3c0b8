import Foundation
import Testing

@testable import Broadcast

/// The pipeline loop's inbox: every event once, in order per poster, in batches; the end and
/// cancellation heard.
@Suite struct EventInboxTests {
    @Test func eventsFromManyThreadsArriveOnceAndInEachPostersOrder() async {
        let inbox = EventInbox<(poster: Int, n: Int)>()
        let posters = 4, each = 10_000
        for poster in 0..<posters {
            Thread { for n in 0..<each { inbox.post((poster, n)) } }.start()
        }
        var next = [Int](repeating: 0, count: posters)
        var batch: [(poster: Int, n: Int)] = []
        while next.reduce(0, +) < posters * each, await inbox.take(into: &batch) {
            for event in batch {
                #expect(event.n == next[event.poster], "poster \(event.poster) out of order")
                next[event.poster] = event.n + 1
            }
        }
        #expect(next == [Int](repeating: each, count: posters))
    }

    @Test func afterFinishThePendingEventsComeThenTheEnd() async {
        let inbox = EventInbox<Int>()
        inbox.post(1)
        inbox.post(2)
        inbox.finish()
        inbox.post(3)
        var batch: [Int] = [99]
        #expect(await inbox.take(into: &batch))
        #expect(batch == [1, 2], "posted before the end, in order; the one after it dropped")
        #expect(await !inbox.take(into: &batch))
        #expect(batch.isEmpty)
    }

    @Test func aWaitingTakeEndsWhenItsTaskIsCancelled() async {
        let inbox = EventInbox<Int>()
        let waiting = Task {
            var batch: [Int] = []
            return await inbox.take(into: &batch)
        }
        waiting.cancel()
        #expect(await waiting.value == false)
    }

    @Test func aWaitingTakeWakesForThePost() async {
        let inbox = EventInbox<Int>()
        let waiting = Task {
            var batch: [Int] = []
            _ = await inbox.take(into: &batch)
            return batch
        }
        inbox.post(7)
        #expect(await waiting.value == [7])
    }
}
