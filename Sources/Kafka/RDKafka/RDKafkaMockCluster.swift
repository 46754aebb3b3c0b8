import CRdKafka
import Logging

/// Owns librdkafka's in-process mock cluster and the handle it runs under.
final class RDKafkaMockCluster: @unchecked Sendable {
    private let client: RDKafkaClient
    private let cluster: OpaquePointer

    init(brokers: Int, logger: Logger) throws(KafkaError) {
        // The mock cluster lives inside a client handle; a producer is the lightest one.
        client = try RDKafkaClient(role: .producer, properties: ["log.queue": "false"], logger: logger)
        guard let cluster = client.withHandle({ rd_kafka_mock_cluster_new($0, Int32(brokers)) }) else {
            throw .configuration("librdkafka could not start a mock cluster with \(brokers) broker(s)")
        }
        self.cluster = cluster
    }

    deinit {
        rd_kafka_mock_cluster_destroy(cluster)
    }

    var bootstrapServers: String { String(cString: rd_kafka_mock_cluster_bootstraps(cluster)) }

    func createTopic(_ name: String, partitions: Int) throws(KafkaError) {
        let err = rd_kafka_mock_topic_create(cluster, name, Int32(partitions), 1)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw .rdKafka(err, context: "create topic \(name)") }
    }
}
