import Broadcast
import Foundation
import Kafka
import Logging
import NotificationHubs
import Synchronization

/// Re-sends through the same client and retry path as `run` (paced by the engine, at most `--rate`
/// per second); what fails again becomes a new dead-letter record with the attempts added up.
final class ReplaySender: Sender {
    /// By hub number; empty in a dry run.
    let clients: [NotificationHubClient]
    /// Each hub's resource URI (its name in the ledger) and, with several, its routes name.
    let resourceURIs: [String]
    let hubNames: [String]?
    /// Where accepted sends are recorded, so that no later replay nor run sends them again.
    let ledger: (any DeliveryLedger)?
    let tally: ReplayTally
    let metrics: PipelineMetrics
    let logger: Logger

    init(
        clients: [NotificationHubClient],
        hubNames: [String]? = nil,
        ledger: (any DeliveryLedger)?,
        tally: ReplayTally,
        metrics: PipelineMetrics,
        logger: Logger
    ) {
        self.clients = clients
        self.hubNames = hubNames
        resourceURIs = clients.map(\.configuration.resourceURI)
        self.ledger = ledger
        self.tally = tally
        self.metrics = metrics
        self.logger = logger
    }

    func onAttemptFailed(_ listener: @escaping @Sendable (AttemptFailure) -> Void) {}
    func refreshMetrics() {}

    func deliver(_ work: ReplaySend) async -> PipelineEngine<ReplaySend>.Outcome {
        // A dry run plans no sends, so a replay without a client never gets here.
        guard clients.indices.contains(work.hub) else { return .abandoned }
        let client = clients[work.hub]
        let hubMetrics = metrics.hub(work.hub)
        do {
            _ = try await client.send(
                work.send.notification,
                tagExpression: work.send.tagExpression,
                scheduledAt: work.send.scheduledAt
            )
            if let ledger {
                // Held until it is stored (a replay's sends are paced, so the wait costs little): a
                // SIGKILL repeats at most the sends in flight.
                await ledger.record(
                    LedgerKey(
                        hub: resourceURIs[work.hub],
                        itemID: work.item.id,
                        platform: work.send.platform,
                        audience: work.send.tagExpression
                    ),
                    source: TopicPartition(topic: work.record.sourceTopic, partition: work.record.sourcePartition)
                )
            }
            tally.settled(work.ticket) { $0.sent += 1 }
            hubMetrics.sent(work.send.notification.platform).increment()
            return .delivered
        } catch {
            if let notTheItems = PipelineEngine<ReplaySend>.Outcome(notTheItemsFault: error) { return notTheItems }
            tally.settled(work.ticket) { $0.failed += 1 }
            hubMetrics.failed.increment()
            let source = KafkaMessage(
                topic: work.record.sourceTopic,
                partition: work.record.sourcePartition,
                offset: work.record.sourceOffset,
                value: work.record.message
            )
            return .failed(
                DeadLetterRecord(
                    reason: error.reason.name,
                    error: error.message,
                    status: error.status,
                    attempts: error.attempts + work.record.attempts,
                    message: work.record.message,
                    itemID: work.item.id,
                    category: work.category,
                    audience: work.send.tagExpression,
                    platform: work.send.platform,
                    hub: hubNames?[work.hub],
                    source: source,
                    firstAttemptAt: error.firstAttemptAt,
                    lastAttemptAt: error.lastAttemptAt
                )
            )
        }
    }
}
