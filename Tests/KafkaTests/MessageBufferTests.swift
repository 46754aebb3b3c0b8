import Testing

@testable import Kafka

/// Paused partitions' messages set aside so that the others' go first, and given back in order.
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
}
