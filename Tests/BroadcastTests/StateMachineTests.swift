import Broadcast
import Kafka
import Testing

@Suite struct OffsetTrackerTests {
    let p0 = TopicPartition(topic: "news.world", partition: 0)
    let p1 = TopicPartition(topic: "news.world", partition: 1)

    @Test func commitsOnlyTheContiguousFinishedPrefix() {
        var t = OffsetTracker()
        for o in [10, 11, 12, 15] as [Int64] { t.started(p0, offset: o) }
        #expect(t.committable().isEmpty)
        t.finished(p0, offset: 11)
        #expect(t.committable().isEmpty, "10 is still in flight")
        t.finished(p0, offset: 10)
        #expect(t.committable() == [TopicPartitionOffset(p0, offset: 12)])
        t.committed(t.committable())
        #expect(t.committable().isEmpty)
        t.finished(p0, offset: 15)
        #expect(t.committable().isEmpty, "12 is still in flight")
        t.finished(p0, offset: 12)
        // Gaps in offsets (compaction) do not block: the next started offset after 12 is 15.
        #expect(t.committable() == [TopicPartitionOffset(p0, offset: 16)])
        #expect(t.inFlight == 0)
    }

    @Test func partitionsAreIndependentAndForgettable() {
        var t = OffsetTracker()
        t.started(p0, offset: 0)
        t.started(p1, offset: 0)
        t.started(p1, offset: 1)
        t.finished(p1, offset: 1)
        t.finished(p1, offset: 0)
        #expect(t.committable() == [TopicPartitionOffset(p1, offset: 2)])
        t.forget(p0)
        #expect(t.inFlight == 0)
    }

    @Test func randomFinishOrderAlwaysCommitsEverythingInTheEnd() {
        var t = OffsetTracker()
        var rng = SystemRandomNumberGenerator()
        let offsets = Array(Int64(0)..<5000)
        for o in offsets { t.started(p0, offset: o) }
        var maxSeen: Int64 = 0
        for o in offsets.shuffled(using: &rng) {
            t.finished(p0, offset: o)
            if let c = t.committable().first?.offset {
                #expect(c >= maxSeen)
                maxSeen = c
            }
        }
        #expect(t.committable() == [TopicPartitionOffset(p0, offset: 5000)])
    }
}
