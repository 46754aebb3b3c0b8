import Kafka

/// Where records come from: a Kafka consumer in `run` and `demo`, a consumer or a file in `replay`,
/// an in-memory script in tests.
public protocol RecordSource: Sendable {
    /// Called once, before `nextBatch`: the source reports its rebalances through these.
    func setRebalanceHandlers(_ handlers: RebalanceHandlers)
    /// Waits up to `timeout` for records, then returns what is there, at most `max`.
    func nextBatch(max: Int, timeout: Duration) async -> SourceBatch
    /// Stores the next offsets to read; throws when the store refuses them.
    func commit(_ offsets: [TopicPartitionOffset]) async throws
    /// Records behind the end of what this member owns, as far as the source knows.
    var lag: Int64 { get }
}

/// What waiting for records ended with.
public enum SourceBatch: Sendable {
    case records([KafkaMessage])
    case timedOut
    /// Nothing more will come.
    case finished
}

/// Turns one source record into the engine's work: decode, validate, plan. Runs on the engine's
/// loop only, so it may keep state.
public protocol RecordPreparer: Sendable {
    associatedtype Send: Sendable
    mutating func prepare(_ message: KafkaMessage) -> PipelineEngine<Send>.Work
}

/// Delivers one send and says how it ended: the hub client in production, a script in tests.
public protocol Sender: Sendable {
    associatedtype Send: Sendable
    func deliver(_ send: Send) async -> PipelineEngine<Send>.Outcome
    /// A throttled attempt was seen while the send still retries; the pipeline installs this.
    func onThrottledAttempt(_ listener: @escaping @Sendable () -> Void)
    /// Brings the sender's own gauges up to date (called on every tick, off the send path).
    func refreshMetrics()
}
