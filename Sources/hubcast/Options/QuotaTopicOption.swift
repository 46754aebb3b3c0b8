import ArgumentParser
import Broadcast
import Kafka
import Logging
import NotificationHubs

/// `--quota-topic`: how the instances sending to one hub namespace find each other and share its
/// quota (`run` and `replay`).
struct QuotaTopicOption: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Kafka topic through which the instances sending to one hub namespace share its quota: four times a second each tells the others what it sends and wants, and sends its share; \"none\": pace alone (env HUBCAST_QUOTA_TOPIC; default hubcast.quota).",
            valueName: "topic"
        )
    )
    var quotaTopic: String?

    /// The quota topic, or nil for `none` (or when none is set and `fallback` is nil).
    func topic(_ settings: Settings, default fallback: String? = QuotaSharing.defaultTopic) throws(CLIError) -> String?
    {
        try settings.topicOrNone(quotaTopic, "quota-topic", default: fallback)
    }

    /// The exchange (a service to run beside the pipeline) and what the pipeline shares through it,
    /// or nil to pace alone. One hub's quota is its namespace's: every instance sending to it shares
    /// it, whatever its group. Several hubs (`--routes`) each share their own hub's.
    static func sharing(
        topic: String?,
        kafka: KafkaConfiguration,
        instance: String,
        hubs: [NotificationHubConfiguration],
        logger: Logger
    ) throws(CLIError) -> (exchange: KafkaQuotaExchange, sharing: QuotaSharing)? {
        guard let topic else { return nil }
        let exchange: KafkaQuotaExchange
        do {
            exchange = try KafkaQuotaExchange(kafka: kafka, topic: topic, instance: instance, logger: logger)
        } catch {
            throw .usage("Kafka configuration: \(error)")
        }
        let owners = hubs.count == 1 ? hubs.map(\.connection.baseURL) : hubs.map(\.resourceURI)
        return (exchange, QuotaSharing(exchange: exchange, instance: instance, hubs: owners))
    }
}
