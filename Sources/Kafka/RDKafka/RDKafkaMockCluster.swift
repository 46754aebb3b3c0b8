import CRdKafka
import Logging
import Synchronization

/// Owns librdkafka's in-process mock cluster and the handle it runs under.
final class RDKafkaMockCluster: Sendable {
    private let client: RDKafkaClient
    // librdkafka's mock API is safe from any thread (it hands each call to the cluster's own
    // thread); the lock only lets the compiler see the pointer shared, and is never contended.
    private let cluster: Mutex<OpaquePointer>

    init(brokers: Int, logger: Logger) throws(KafkaError) {
        // The mock cluster lives inside a client handle; a producer is the lightest one.
        client = try RDKafkaClient(role: .producer, properties: ["log.queue": "false"], logger: logger)
        guard let cluster = client.withHandle({ rd_kafka_mock_cluster_new($0, Int32(brokers)) }) else {
            throw .configuration("librdkafka could not start a mock cluster with \(brokers) broker(s)")
        }
        self.cluster = Mutex(cluster)
    }

    deinit {
        cluster.withLock { rd_kafka_mock_cluster_destroy($0) }
    }

    var bootstrapServers: String { cluster.withLock { String(cString: rd_kafka_mock_cluster_bootstraps($0)) } }

    func createTopic(_ name: String, partitions: Int) throws(KafkaError) {
        let err = cluster.withLock { rd_kafka_mock_topic_create($0, name, Int32(partitions), 1) }
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw .rdKafka(err, context: "create topic \(name)") }
    }
}
