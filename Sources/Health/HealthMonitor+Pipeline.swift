import Broadcast
import Foundation
import Kafka

extension HealthMonitor {
    /// Hears the pipeline's verdicts on the hub.
    public var pipelineObserver: PipelineObserver {
        PipelineObserver(
            hubUnavailable: { [self] in hubUnavailable($0, reason: $1) },
            hubAvailable: { [self] in hubAvailable($0) }
        )
    }

    /// `source`, telling this monitor of its rebalances.
    public func watching(_ source: any RecordSource) -> any RecordSource {
        HealthReportingSource(base: source, monitor: self)
    }

    /// `sink`, telling this monitor whether its writes succeed.
    public func watching(_ sink: any DeadLetterSink) -> any DeadLetterSink {
        HealthReportingDeadLetterSink(base: sink, monitor: self)
    }
}

/// A record source whose rebalances also reach the health monitor (partitions owned or joining).
struct HealthReportingSource: RecordSource {
    let base: any RecordSource
    let monitor: HealthMonitor

    func setRebalanceHandlers(_ handlers: RebalanceHandlers) {
        let monitor = self.monitor
        // A copy with two handlers wrapped: whatever else the pipeline handles passes through as it is.
        var watched = handlers
        watched.onAssign = { partitions in
            monitor.assigned(partitions)
            handlers.onAssign(partitions)
        }
        watched.onRevoke = { partitions in
            // The pipeline commits first; the partitions count as owned until they have gone.
            let offsets = handlers.onRevoke(partitions)
            monitor.revoked(partitions)
            return offsets
        }
        base.setRebalanceHandlers(watched)
    }

    func nextBatch(max: Int, timeout: Duration) async -> SourceBatch {
        await base.nextBatch(max: max, timeout: timeout)
    }
    func takeReady(max: Int) -> [KafkaMessage] { base.takeReady(max: max) }
    func commit(_ offsets: [TopicPartitionOffset]) async throws { try await base.commit(offsets) }
    var lag: Int64 { base.lag }
    func pause(_ partitions: [TopicPartition]) throws { try base.pause(partitions) }
    func resume(_ partitions: [TopicPartition]) throws { try base.resume(partitions) }
}

/// A dead-letter sink whose failures make the process unready until a write succeeds again.
struct HealthReportingDeadLetterSink: DeadLetterSink {
    let base: any DeadLetterSink
    let monitor: HealthMonitor

    func write(_ record: DeadLetterRecord) async throws {
        do {
            try await base.write(record)
            monitor.deadLetterWritten()
        } catch {
            monitor.deadLetterWriteFailed(reason: Self.reason(error))
            throw error
        }
    }

    func flush() async throws {
        do {
            try await base.flush()
        } catch {
            monitor.deadLetterWriteFailed(reason: Self.reason(error))
            throw error
        }
    }

    /// The kind of failure only: a probe answer is no place for an error's text.
    private static func reason(_ error: any Error) -> String {
        if let kafka = error as? KafkaError { return "\(kafka)" }
        if let posix = error as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
        return String(describing: type(of: error))
    }
}
