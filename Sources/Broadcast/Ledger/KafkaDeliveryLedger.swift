import Foundation
import Kafka
import Logging
import Synchronization
import TextFormats

/// The delivered-sends ledger in a compacted Kafka topic, the cluster the instances already
/// share. One record per accepted send, keyed by its `LedgerKey` (so compaction keeps one per
/// send), written to the ledger partition of the news partition it came from: a process taking a
/// news partition over reads one ledger partition, not the whole ledger. Records are batched by
/// librdkafka (`linger.ms`, 5 ms), and a send ends before its record is stored only while few
/// enough records are behind, so a SIGKILL can lose only the records of sends in flight and of
/// those few; a revoke waits for them (`flush`) before the partition's commit, so the next owner
/// reads them.
public final class KafkaDeliveryLedger: DeliveryLedger {
    public static let defaultTopic = "hubcast.delivered"
    /// How long reading the ledger back may take before the sends it did not read may repeat.
    static let readTimeout: Duration = .seconds(30)

    public let topic: String
    /// The hubs whose sends this process records and reads back (their resource URIs).
    public let hubs: Set<String>
    /// Seconds a record counts for.
    public let window: Double
    private let partitions: Int
    private let producer: KafkaProducer
    private let reader: KafkaTopicReader
    private let logger: Logger
    private let losses: Losses
    private let clock: @Sendable () -> Double

    /// Opens the ledger in `topic`, creating the topic with one record where the cluster creates
    /// topics on first use. Throws when the topic cannot be found nor created.
    public static func open(
        kafka: KafkaConfiguration,
        topic: String,
        hubs: [String],
        window: Double,
        logger: Logger,
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) async throws(KafkaError) -> KafkaDeliveryLedger {
        // Batched by librdkafka every 5 ms (its default): about a fifth of the produce requests of
        // every millisecond, each with its system calls and wake-ups on both sides (the broker's extra
        // CPU a send fell from 3.2 to 1.2 µs). A send ends before its record is stored while few
        // enough records are behind (`HubSender`), so the delay is not a slot's time
        // (benchmarks/README.md).
        var configuration = KafkaProducerConfiguration(kafka: kafka)
        configuration.lingerMs = 5
        // A record not stored within 5 s (the ledger's partition unavailable) is given up, counted,
        // and its send may repeat after a restart: a send past the records-behind bound waits for
        // its record, and must not hold the hub's sends longer.
        configuration.messageTimeoutMs = 5000
        let producer = try KafkaProducer(configuration: configuration, logger: logger)
        let reader = KafkaTopicReader(kafka: kafka, logger: logger)
        // The producer's own handle answers the metadata requests: no client is made for them.
        var count = try await producer.partitionCount(topic: topic)
        if count == nil {
            try producer.enqueue(topic: topic, partition: nil, key: Array("hubcast".utf8), value: Array("{}".utf8))
            try await Blocking.run { () throws(KafkaError) in try producer.flushBlocking(timeout: .seconds(10)) }
            count = try await producer.partitionCount(topic: topic)
        }
        guard let count, count > 0 else {
            throw .configuration(
                "the delivered-sends ledger topic \(topic) does not exist and the cluster did not create it: create it with cleanup.policy=compact, or pass --ledger-topic none"
            )
        }
        return KafkaDeliveryLedger(
            topic: topic,
            hubs: Set(hubs),
            window: window,
            partitions: count,
            producer: producer,
            reader: reader,
            logger: logger,
            clock: clock
        )
    }

    private init(
        topic: String,
        hubs: Set<String>,
        window: Double,
        partitions: Int,
        producer: KafkaProducer,
        reader: KafkaTopicReader,
        logger: Logger,
        clock: @escaping @Sendable () -> Double
    ) {
        self.topic = topic
        self.hubs = hubs
        self.window = window
        self.partitions = partitions
        self.producer = producer
        self.reader = reader
        self.logger = logger
        self.clock = clock
        losses = Losses(topic: topic, logger: logger)
    }

    /// Records that could not be stored, counted and said once. Its own object: a pending
    /// delivery holds it, not the ledger (which would keep the producer alive from its own thread).
    final class Losses: Sendable {
        private let dropped = Atomic<Int>(0)
        private let topic: String
        private let logger: Logger

        init(topic: String, logger: Logger) {
            self.topic = topic
            self.logger = logger
        }

        var total: Int { dropped.load(ordering: .relaxed) }

        func count(_ error: KafkaError) {
            if dropped.add(1, ordering: .relaxed).newValue == 1 {
                logger.warning(
                    "A delivered send could not be recorded in the ledger: it may be sent again after a restart",
                    metadata: ["topic": "\(topic)", "error": "\(error)"]
                )
            }
        }
    }

    public func record(_ key: LedgerKey, source: TopicPartition, stored: @escaping @Sendable () -> Void) {
        // The value says where the item was read: for a person reading the topic, not for hubcast.
        var value = JSONWriter(reservingCapacity: 48 + source.topic.utf8.count)
        value.beginObject()
        value.member("topic", source.topic)
        value.key("partition")
        value.number(Int64(source.partition))
        value.endObject()
        do throws(KafkaError) {
            try producer.enqueue(
                topic: topic,
                partition: Int32(Self.ledgerPartition(of: source, among: partitions)),
                key: key.encoded,
                value: value.bytes
            ) { [losses] delivery in
                if case .failure(let error) = delivery { losses.count(error) }
                stored()
            }
        } catch {
            losses.count(error)
            stored()
        }
    }

    public func recorded(for sources: [TopicPartition]) -> [RecordedSend] {
        let wanted = Set(sources.map { Int32(Self.ledgerPartition(of: $0, among: partitions)) })
        return read(wanted.sorted(), for: "partitions \(sources.map(\.description).sorted())")
    }

    public func recordedAll() -> [RecordedSend] {
        read((0..<Int32(partitions)).map { $0 }, for: "the whole ledger")
    }

    private func read(_ ledgerPartitions: [Int32], for what: String) -> [RecordedSend] {
        let started = ContinuousClock.now
        let cutoff = clock() - window
        var sends: [RecordedSend] = []
        var records = 0
        do throws(KafkaError) {
            records = try reader.read(topic: topic, partitions: ledgerPartitions, timeout: Self.readTimeout) {
                message in
                guard let bytes = message.key, let key = LedgerKey(decoding: bytes), hubs.contains(key.hub),
                    let ms = message.timestampMs, Double(ms) / 1000 >= cutoff
                else { return }
                sends.append(RecordedSend(processKey: key.processKey, at: Double(ms) / 1000))
            }
        } catch {
            logger.warning(
                "The delivered-sends ledger could not be read back: sends the hub already accepted may go again",
                metadata: ["topic": "\(topic)", "for": "\(what)", "error": "\(error)"]
            )
        }
        logger.info(
            "Read the delivered-sends ledger",
            metadata: [
                "for": "\(what)", "records": "\(records)", "sends": "\(sends.count)",
                "seconds": "\(String(format: "%.2f", (ContinuousClock.now - started).inSeconds))",
            ]
        )
        return sends
    }

    public func flush(timeout: Duration) {
        do throws(KafkaError) {
            try producer.flushBlocking(timeout: timeout)
        } catch {
            logger.warning(
                "The delivered-sends ledger was not written in time: the next owner may send some of these items again",
                metadata: ["topic": "\(topic)", "error": "\(error)"]
            )
        }
    }

    public var unrecorded: Int { losses.total }

    /// Writes what is left (up to `timeout`) and stops the producer.
    public func close(timeout: Duration = .seconds(10)) async {
        do throws(KafkaError) {
            try await producer.close(timeout: timeout)
        } catch {
            logger.warning(
                "The delivered-sends ledger was not fully written at exit: some sends may go again after a restart",
                metadata: ["topic": "\(topic)", "error": "\(error)"]
            )
        }
    }

    /// The ledger partition for a news partition: FNV-1a of "topic/partition", the same in every
    /// process and release (Swift's own hash is seeded per process).
    static func ledgerPartition(of source: TopicPartition, among count: Int) -> Int {
        // Per send: the bytes of "topic/partition" hashed in place, with no string built for them.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        for byte in source.topic.utf8 { mix(byte) }
        mix(UInt8(ascii: "/"))
        for byte in String(source.partition).utf8 { mix(byte) }
        return Int(hash % UInt64(max(1, count)))
    }
}
