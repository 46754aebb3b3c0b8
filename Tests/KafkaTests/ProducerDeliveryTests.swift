import Logging
import Synchronization
import Testing

@testable import Kafka

/// Whoever waits for a message's delivery hears once, whatever happens to the producer.
@Suite struct ProducerDeliveryTests {
    /// No broker answers at 127.0.0.1:1: the messages can only wait in librdkafka's queue, and
    /// closing the producer must give them up and say so to each waiter (a send of the pipeline
    /// waits there for its ledger record), never leave one waiting. (The time limit is a guard
    /// against a hang, generous for a full run on 2 cores.)
    @Test(.timeLimit(.minutes(5))) func closingGivesUpWhatWasNotDeliveredAndTellsEachWaiterOnce() async throws {
        var configuration = KafkaProducerConfiguration(kafka: KafkaConfiguration(bootstrapServers: "127.0.0.1:1"))
        configuration.lingerMs = 1
        let producer = try KafkaProducer(configuration: configuration, logger: Logger(label: "hubcast.tests"))
        let (reports, writer) = AsyncStream.makeStream(of: Result<DeliveryReport, KafkaError>.self)
        for n in 0..<3 {
            try producer.enqueue(topic: "nowhere", partition: 0, key: [UInt8(n)], value: [UInt8(n)]) {
                writer.yield($0)
            }
        }
        // Delivery cannot happen: the flush times out, the rest is purged.
        await #expect(throws: KafkaError.self) { try await producer.close(timeout: .milliseconds(200)) }
        var failures = 0
        for await report in reports {
            guard case .failure = report else {
                Issue.record("a message was delivered with no broker")
                continue
            }
            failures += 1
            if failures == 3 { break }
        }
        #expect(failures == 3)
        // After closing, a message is refused at once: its waiter is never called.
        #expect(throws: KafkaError.self) {
            try producer.enqueue(topic: "nowhere", partition: 0, key: [9], value: [9]) { _ in
                Issue.record("a refused message's waiter was called")
            }
        }
    }
}
