/// A message read from Kafka, copied out of librdkafka's buffer. Its headers are not read: nothing
/// hubcast consumes carries any it uses, and parsing them (librdkafka's list, and our copies of
/// each name and value) cost about seven allocations a message.
public struct KafkaMessage: Sendable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: [UInt8]?
    public var value: [UInt8]
    /// Milliseconds since the epoch, as set by the producer or the broker; nil when absent.
    public var timestampMs: Int64?

    public init(
        topic: String,
        partition: Int32,
        offset: Int64,
        key: [UInt8]? = nil,
        value: [UInt8],
        timestampMs: Int64? = nil
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.timestampMs = timestampMs
    }

    public var topicPartition: TopicPartition { TopicPartition(topic: topic, partition: partition) }
}

/// A Kafka record header, as produced.
public struct KafkaHeader: Sendable, Hashable {
    public var name: String
    public var value: [UInt8]?

    public init(name: String, value: [UInt8]?) {
        self.name = name
        self.value = value
    }
}

/// Where the broker stored a produced message.
public struct DeliveryReport: Sendable, Hashable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
}
