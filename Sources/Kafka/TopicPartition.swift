/// A partition of a topic.
public struct TopicPartition: Hashable, Sendable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }
}

/// A committable position: the offset of the next message to read in a partition.
public struct TopicPartitionOffset: Hashable, Sendable, CustomStringConvertible {
    public var topicPartition: TopicPartition
    /// The next offset to consume, i.e. the last processed offset plus one (Kafka's convention).
    public var offset: Int64

    public init(_ topicPartition: TopicPartition, offset: Int64) {
        self.topicPartition = topicPartition
        self.offset = offset
    }

    public var description: String { "\(topicPartition)@\(offset)" }
}
