import TestSupport
import Testing

@testable import Kafka

/// Partitions take turns, each in its order; paused partitions' messages set aside so that the
/// others' go first, and given back in order.
@Suite struct MessageBufferTests {
    let sports = TopicPartition(topic: "news.sports", partition: 0)
    let world = TopicPartition(topic: "news.world", partition: 0)

    func message(_ p: TopicPartition, _ offset: Int64) -> KafkaMessage {
        KafkaMessage(topic: p.topic, partition: p.partition, offset: offset, value: [])
    }

    func ids(_ messages: [KafkaMessage]) -> [String] { messages.map { "\($0.topic.dropFirst(5))@\($0.offset)" } }

    @Test func aHeldPartitionsMessagesStepAsideAndComeBackInOrder() {
        let buffer = MessageBuffer()
        for offset: Int64 in 0..<3 { buffer.append(message(sports, offset)) }
        buffer.append(message(world, 0))
        buffer.hold([sports])
        buffer.append(message(sports, 3))
        buffer.append(message(world, 1))
        #expect(buffer.readyCount == 2 && buffer.count == 6)
        #expect(ids(buffer.drain(max: 10)) == ["world@0", "world@1"])
        buffer.release([sports])
        buffer.append(message(sports, 4))
        #expect(ids(buffer.drain(max: 10)) == ["sports@0", "sports@1", "sports@2", "sports@3", "sports@4"])
        #expect(buffer.count == 0)
    }

    @Test func aReleaseWakesTheWaitingReader() async {
        let buffer = MessageBuffer()
        buffer.hold([sports])
        buffer.append(message(sports, 7))
        let reader = Task { await buffer.next() }
        // The reader waits: the only message is set aside. It gets it once released.
        var spins = 0
        while !buffer.hasWaiter, spins < 10_000_000 {
            spins += 1
            await Task.yield()
        }
        #expect(buffer.hasWaiter)
        buffer.release([sports])
        #expect(await reader.value?.offset == 7)
    }

    @Test func aRevokeDropsHeldAndReadyMessagesAndForgetsThePause() {
        let buffer = MessageBuffer()
        buffer.append(message(sports, 0))
        buffer.hold([sports])
        buffer.append(message(sports, 1))
        buffer.append(message(world, 0))
        buffer.revoke([sports])
        #expect(buffer.count == 1)
        // Assigned again later: no longer held.
        buffer.append(message(sports, 5))
        #expect(ids(buffer.drain(max: 10)) == ["world@0", "sports@5"])
    }

    @Test func topicsTakeTurnsAndATopicsMessagesKeepTheirFetchOrder() async {
        let buffer = MessageBuffer()
        let politics = TopicPartition(topic: "news.politics", partition: 2)
        let sports1 = TopicPartition(topic: "news.sports", partition: 1)
        // A fetch answer of a flooded topic's two partitions, then a quiet topic's one message.
        for offset: Int64 in 0..<3 { buffer.append(message(sports, offset)) }
        for offset: Int64 in 0..<2 { buffer.append(message(sports1, offset)) }
        buffer.append(message(world, 0))
        buffer.append(message(politics, 9))
        buffer.append(message(world, 1))
        #expect(buffer.readyCount == 8)
        #expect(ids(buffer.drain(max: 4)) == ["sports@0", "world@0", "politics@9", "sports@1"])
        #expect(await buffer.next()?.offset == 1)  // world's turn
        // Within a topic, a partition's run stays a run: the application sees its backlog grow.
        let rest = buffer.drain(max: 10)
        #expect(rest.map(\.partition) == [0, 1, 1] && rest.map(\.offset) == [2, 0, 1])
        #expect(buffer.readyCount == 0 && buffer.count == 0)
    }

    @Test func aHeldPartitionLosesItsTurnAndARevokedOneItsMessages() {
        let buffer = MessageBuffer()
        let politics = TopicPartition(topic: "news.politics", partition: 0)
        for offset: Int64 in 0..<2 {
            buffer.append(message(sports, offset))
            buffer.append(message(world, offset))
            buffer.append(message(politics, offset))
        }
        buffer.hold([world])
        #expect(buffer.readyCount == 4 && buffer.count == 6)
        #expect(ids(buffer.drain(max: 1)) == ["sports@0"])
        buffer.revoke([politics])
        #expect(buffer.readyCount == 1 && buffer.count == 3)
        buffer.release([world])
        #expect(ids(buffer.drain(max: 10)) == ["sports@1", "world@0", "world@1"])
        // A hold and a revoke twice are no-ops; counts never go below zero.
        buffer.hold([sports])
        buffer.hold([sports])
        buffer.revoke([sports])
        buffer.revoke([sports])
        #expect(buffer.count == 0 && buffer.readyCount == 0)
        buffer.append(message(sports, 2))
        #expect(ids(buffer.drain(max: 10)) == ["sports@2"])
    }

    /// Any interleaving of appends, holds, releases, revokes and takes: every partition's messages
    /// come out in order, none twice, and none lost unless revoked; the counts match a model.
    @Test func randomOperationsKeepEachPartitionsOrderAndTheCounts() {
        var rng = SeededGenerator(seed: 7)
        let partitions = (0..<5).map { TopicPartition(topic: "news.t\($0 % 3)", partition: Int32($0)) }
        for _ in 0..<200 {
            let buffer = MessageBuffer()
            var next: [TopicPartition: Int64] = [:]
            var expected: [TopicPartition: [Int64]] = [:]
            var held: Set<TopicPartition> = []
            for _ in 0..<300 {
                let p = partitions[Int(rng.next() % 5)]
                switch rng.next() % 10 {
                case 0..<5:
                    let offset = next[p, default: 0]
                    next[p] = offset + 1
                    buffer.append(message(p, offset))
                    expected[p, default: []].append(offset)
                case 5:
                    buffer.hold([p])
                    held.insert(p)
                case 6:
                    buffer.release([p])
                    held.remove(p)
                case 7:
                    buffer.revoke([p])
                    held.remove(p)
                    expected[p] = []
                default:
                    let max = Int(rng.next() % 4)
                    let ready = expected.filter { !held.contains($0.key) }.values.reduce(0) { $0 + $1.count }
                    let taken = buffer.drain(max: max)
                    // Nothing ready is stranded out of turn.
                    #expect(taken.count == min(max, ready))
                    for m in taken {
                        #expect(!held.contains(m.topicPartition))
                        #expect(expected[m.topicPartition]?.first == m.offset, "\(m.topicPartition)@\(m.offset)")
                        expected[m.topicPartition]?.removeFirst()
                    }
                }
                let waiting = expected.values.reduce(0) { $0 + $1.count }
                let ready = expected.filter { !held.contains($0.key) }.values.reduce(0) { $0 + $1.count }
                #expect(buffer.count == waiting && buffer.readyCount == ready)
            }
            // Released, everything left comes out, each partition's in order.
            buffer.release(partitions)
            var left: [TopicPartition: [Int64]] = [:]
            for m in buffer.drain(max: .max) { left[m.topicPartition, default: []].append(m.offset) }
            #expect(left == expected.filter { !$0.value.isEmpty })
            #expect(buffer.count == 0)
        }
    }
}
