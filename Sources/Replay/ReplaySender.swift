import Broadcast
import Foundation
import Kafka
import Logging
import NotificationHubs
import Synchronization

/// Re-sends through the same client and retry path as `run` (paced by the engine, at most `--rate`
/// per second); what fails again becomes a new dead-letter record with the attempts added up.
final class ReplaySender: Sender {
    let client: NotificationHubClient?
    /// Where accepted sends are recorded, so that no later replay nor run sends them again.
    let ledger: (any DeliveryLedger)?
    let tally: ReplayTally
    let metrics: PipelineMetrics
    let logger: Logger

    init(
        client: NotificationHubClient?,
        ledger: (any DeliveryLedger)?,
        tally: ReplayTally,
        metrics: PipelineMetrics,
        logger: Logger
    ) {
        self.client = client
        self.ledger = ledger
        self.tally = tally
        self.metrics = metrics
        self.logger = logger
    }

    func onAttemptFailed(_ listener: @escaping @Sendable (AttemptFailure) -> Void) {}
    func refreshMetrics() {}

    func deliver(_ work: ReplaySend) async -> PipelineEngine<ReplaySend>.Outcome {
        // A dry run plans no sends, so a replay without a client never gets here.
        guard let client else { return .abandoned }
        do {
            _ = try await client.send(
                work.send.notification,
                tagExpression: work.send.tagExpression,
                scheduledAt: work.send.scheduledAt
            )
            ledger?.record(
                hub: client.configuration.resourceURI,
                itemID: work.item.id,
                platform: work.send.platform,
                audience: work.send.tagExpression,
                source: TopicPartition(topic: work.record.sourceTopic, partition: work.record.sourcePartition)
            )
            tally.settled(work.ticket) { $0.sent += 1 }
            metrics.sent(work.send.notification.platform).increment()
            return .delivered
        } catch {
            if let notTheItems = PipelineEngine<ReplaySend>.Outcome(notTheItemsFault: error) { return notTheItems }
            tally.settled(work.ticket) { $0.failed += 1 }
            metrics.failed.increment()
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
                    source: source,
                    firstAttemptAt: error.firstAttemptAt,
                    lastAttemptAt: error.lastAttemptAt
                )
            )
        }
    }
}
