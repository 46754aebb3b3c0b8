import ArgumentParser
import Broadcast
import Kafka
import Logging

/// `--ledger-topic` and `--dedupe-window`: where the sends the hub accepted are recorded so that no
/// instance, restart or replay makes them again, and for how long (`run` and `replay`).
struct LedgerOption: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Compacted Kafka topic in which every send the hub accepted is recorded and read back when partitions are taken over or a replay starts, so that a restart, a rebalance or a replay does not send it again; \"none\": remember sends in this process only (env HUBCAST_LEDGER_TOPIC; default hubcast.delivered).",
            valueName: "topic"
        )
    )
    var ledgerTopic: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds an accepted send is remembered, in the process and in the ledger, so it is not sent again (86400 is a day); at most 1,000,000 sends are remembered (env HUBCAST_DEDUPE_WINDOW; default 86400).",
            valueName: "seconds"
        )
    )
    var dedupeWindow: Int?

    func window(_ settings: Settings) throws(CLIError) -> Double {
        Double(try settings.int(dedupeWindow, "dedupe-window", default: 86_400, range: 60...2_592_000))
    }

    /// The ledger topic, or nil for `none` (or when none is set and `fallback` is nil).
    func topic(
        _ settings: Settings,
        default fallback: String? = KafkaDeliveryLedger.defaultTopic
    ) throws(CLIError)
        -> String?
    {
        try settings.topicOrNone(ledgerTopic, "ledger-topic", default: fallback)
    }

    /// Opens the ledger in `topic` for `hubs` (resource URIs); nil when `topic` is nil.
    static func open(
        topic: String?,
        kafka: KafkaConfiguration,
        hubs: [String],
        window: Double,
        logger: Logger
    ) async throws(CLIError) -> KafkaDeliveryLedger? {
        guard let topic else { return nil }
        do {
            return try await KafkaDeliveryLedger.open(
                kafka: kafka,
                topic: topic,
                hubs: hubs,
                window: window,
                logger: logger
            )
        } catch {
            if error.isConfigurationError { throw .usage("--ledger-topic: \(error)") }
            throw .unreachable("the delivered-sends ledger \(topic) could not be opened: \(error)")
        }
    }
}
