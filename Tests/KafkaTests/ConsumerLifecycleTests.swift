import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Kafka

/// The consumer's life as a value, and the consumer refusing calls its state does not allow.
@Suite struct ConsumerLifecycleTests {
    typealias Call = ConsumerLifecycle.Call

    /// The calls each state allows, every other one refused with `wrongState`.
    @Test func eachStateAllowsItsCallsAndRefusesTheRest() {
        let allowed: [ConsumerLifecycle.State: Set<Call>] = [
            .created: [.run, .committed, .checkReachable],
            .running: [.commit, .committed, .pause, .resume, .checkReachable],
            .closing: [.commit, .committed, .checkReachable],
            .closed: [],
        ]
        let all: [Call] = [.run, .commit, .committed, .pause, .resume, .checkReachable]
        for (state, calls) in allowed {
            let lifecycle = Self.lifecycle(in: state)
            #expect(lifecycle.state == state)
            for call in all {
                do {
                    try lifecycle.check(call)
                    #expect(calls.contains(call), "\(call) allowed while \(state)")
                } catch {
                    #expect(!calls.contains(call), "\(call) refused while \(state)")
                    #expect(error.isWrongState && error.description.contains(call.rawValue), "\(error)")
                }
            }
        }
    }

    @Test func runOnceStopOnceAndAStopBeforeRunNeverJoins() throws {
        var lifecycle = ConsumerLifecycle()
        try lifecycle.start()
        #expect(throws: KafkaError.self) { try lifecycle.start() }
        let first = lifecycle.stop(), second = lifecycle.stop()
        #expect(first, "a running loop is told to stop")
        #expect(!second, "once")
        lifecycle.closed()
        #expect(lifecycle.state == .closed)

        var early = ConsumerLifecycle()
        let told = early.stop()
        #expect(!told, "no loop to tell")
        #expect(early.state == .closed)
        #expect(throws: KafkaError.self) { try early.start() }
    }

    /// No broker is needed: every call below is refused before librdkafka is asked anything.
    @Test func theConsumerRefusesCallsOutOfTurn() async throws {
        let config = KafkaTestKit.consumerConfiguration("127.0.0.1:9", group: "lifecycle", topics: ["news.world"])
        let consumer = try KafkaConsumer(configuration: config, logger: KafkaTestKit.logger)
        let partition = TopicPartition(topic: "news.world", partition: 0)
        #expect(throws: KafkaError.self) { try consumer.pause([partition]) }
        #expect(throws: KafkaError.self) { try consumer.resume([partition]) }
        await #expect(throws: KafkaError.self) {
            try await consumer.commit([TopicPartitionOffset(partition, offset: 1)])
        }
        consumer.stop()
        do {
            try await consumer.run()
            Issue.record("a consumer stopped before it ran joined its group")
        } catch {
            #expect((error as? KafkaError)?.isWrongState == true, "\(error)")
        }
        await #expect(throws: KafkaError.self) { try await consumer.checkReachable(timeout: .milliseconds(1)) }
    }

    static func lifecycle(in state: ConsumerLifecycle.State) -> ConsumerLifecycle {
        var lifecycle = ConsumerLifecycle()
        switch state {
        case .created: break
        case .running: try? lifecycle.start()
        case .closing:
            try? lifecycle.start()
            _ = lifecycle.stop()
        case .closed: _ = lifecycle.stop()
        }
        return lifecycle
    }
}
