import Logging

/// An in-memory Kafka cluster for development and tests (librdkafka's mock cluster).
///
/// Everything it stores is lost when it stops; it is not a production broker.
public final class DevBroker: Sendable {
    private let cluster: RDKafkaMockCluster

    /// Starts the cluster on loopback with the given topics already created.
    public init(brokers: Int = 1, topics: [String: Int] = [:], logger: Logger) throws(KafkaError) {
        guard brokers >= 1 else { throw .configuration("--brokers must be at least 1, got \(brokers)") }
        cluster = try RDKafkaMockCluster(brokers: brokers, logger: logger)
        for (name, partitions) in topics.sorted(by: { $0.key < $1.key }) {
            try createTopic(name, partitions: partitions)
        }
    }

    /// `host:port` list that clients bootstrap from.
    public var bootstrapServers: String { cluster.bootstrapServers }

    public func createTopic(_ name: String, partitions: Int) throws(KafkaError) {
        guard partitions >= 1 else {
            throw .configuration("topic \(name) needs at least 1 partition, got \(partitions)")
        }
        try cluster.createTopic(name, partitions: partitions)
    }
}
