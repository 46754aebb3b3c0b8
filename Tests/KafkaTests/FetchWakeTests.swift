import Testing

@testable import Kafka

/// When the consumer wakes librdkafka's fetchers: once per time its queue was seen full and then
/// drained to half, never while a failed wake backs off.
@Suite struct FetchWakeTests {
    let now = Duration.seconds(5)

    /// Feeds the queue lengths in order; the ones at which a wake was asked for.
    func wakes(_ wake: inout FetchWake, _ lengths: [Int], at now: Duration) -> [Int] {
        lengths.filter { wake.queued($0, now: now) }
    }

    @Test func aQueueSeenFullWakesOnceWhenItHasDrainedToHalf() {
        var wake = FetchWake(messages: 500, bytes: 1 << 20)
        wake.polled(messageBytes: 100)
        // Never full: no wake however it moves.
        #expect(wakes(&wake, [400, 0, 449, 100], at: now).isEmpty)
        #expect(!wake.armed)
        // 90%: the fetchers may have stopped. Not yet half, then half: one wake.
        #expect(wakes(&wake, [450, 300, 251, 250, 0, 400], at: now) == [250])
        #expect(!wake.armed)
        // Full again: the next drain wakes again.
        #expect(wakes(&wake, [480, 10, 0], at: now) == [10])
    }

    @Test func aQueueSeenFullBeforeATakeThatEmptiedItWakesAfterTheTake() {
        var wake = FetchWake(messages: 500, bytes: 1 << 20)
        wake.polled(messageBytes: 100)
        // Full before the take, empty after it: only the look before it saw the queue full.
        wake.seen(480)
        #expect(wake.armed)
        #expect(wakes(&wake, [0], at: now) == [0])
        // Seen short of full: nothing armed, no wake.
        wake.seen(449)
        #expect(wakes(&wake, [0], at: now).isEmpty)
    }

    @Test func largeMessagesFillTheQueueByBytesFirst() {
        var wake = FetchWake(messages: 500, bytes: 100_000)
        // The first message sets the mean: large items count as large from the start.
        wake.polled(messageBytes: 4_000)
        #expect(wake.meanMessageBytes == 4_000)
        for _ in 0..<1000 { wake.polled(messageBytes: 4_000) }
        #expect(abs(wake.meanMessageBytes - 4_000) < 1)
        // 23 messages of 4 kB are 92% of the bytes and 5% of the messages; 13 are more than half.
        #expect(wakes(&wake, [23, 13, 12], at: now) == [12])
    }

    @Test func aFailedWakeIsRetriedOnlyAfterItsBackoff() {
        var wake = FetchWake(messages: 100, bytes: 1 << 20, backoffAfterFailure: .seconds(1))
        #expect(wakes(&wake, [95, 0], at: now) == [0])
        wake.failed(now: now)
        #expect(wake.armed)
        #expect(wakes(&wake, [0], at: now + .milliseconds(999)).isEmpty)
        #expect(wakes(&wake, [0], at: now + .seconds(1)) == [0])
    }

    @Test func theThresholdsAreLibrdkafkasEffectiveOnes() {
        let hubcast = FetchWake(properties: ["queued.min.messages": "500", "queued.max.messages.kbytes": "1024"])
        #expect(hubcast.messages == 500 && hubcast.bytes == 1_048_576)
        // Left out or unreadable: librdkafka's own defaults, which are what it then uses.
        let defaults = FetchWake(properties: ["queued.min.messages": "many"])
        #expect(defaults.messages == 100_000 && defaults.bytes == 65_536 * 1024)
    }

    @Test func theConsumersDefaultsAreWhatTheWakeReads() {
        let config = KafkaConsumerConfiguration(
            kafka: KafkaConfiguration(bootstrapServers: "127.0.0.1:9092"),
            groupID: "g",
            topics: ["news.world"]
        )
        let wake = FetchWake(properties: config.librdkafkaProperties)
        #expect(wake.messages == 100 && wake.bytes == 256 * 1024)
    }
}
