import Kafka

/// A record source whose rebalances pass through the delivered-sends ledger: partitions coming in
/// are not handed on until the sends recorded for them are known delivered (librdkafka gives their
/// records to nobody while its rebalance callback runs), and partitions going out are let go only
/// after the ledger has stored their sends, before their offsets are committed.
public struct LedgeredSource: RecordSource {
    let source: any RecordSource
    let ledger: any DeliveryLedger
    let delivered: DeliveredSends
    /// How long a revoke waits for the ledger before it lets the partitions go anyway.
    let flushTimeout: Duration

    public init(
        _ source: any RecordSource,
        ledger: any DeliveryLedger,
        delivered: DeliveredSends,
        flushTimeout: Duration = .seconds(10)
    ) {
        self.source = source
        self.ledger = ledger
        self.delivered = delivered
        self.flushTimeout = flushTimeout
    }

    public func setRebalanceHandlers(_ handlers: RebalanceHandlers) {
        let ledger = self.ledger, delivered = self.delivered, flushTimeout = self.flushTimeout
        source.setRebalanceHandlers(
            RebalanceHandlers(
                onAssign: { partitions in
                    if !partitions.isEmpty {
                        delivered.remember(
                            ledger: ledger.recorded(for: partitions).map { ($0.processKey, $0.at) }
                        )
                    }
                    handlers.onAssign(partitions)
                },
                onRevoke: { partitions in
                    let offsets = handlers.onRevoke(partitions)
                    ledger.flush(timeout: flushTimeout)
                    return offsets
                },
                onRevokeCommitFailed: handlers.onRevokeCommitFailed
            )
        )
    }

    public func nextBatch(max: Int, timeout: Duration) async -> SourceBatch {
        await source.nextBatch(max: max, timeout: timeout)
    }

    public func takeReady(max: Int) -> [KafkaMessage] { source.takeReady(max: max) }

    public func commit(_ offsets: [TopicPartitionOffset]) async throws {
        try await source.commit(offsets)
    }

    public var lag: Int64 { source.lag }

    public func pause(_ partitions: [TopicPartition]) throws { try source.pause(partitions) }

    public func resume(_ partitions: [TopicPartition]) throws { try source.resume(partitions) }
}
