import Foundation
import Kafka

/// Where records come from: a Kafka consumer in `run` and `demo`, a consumer or a file in `replay`,
/// an in-memory script in tests.
public protocol RecordSource: Sendable {
    /// Called once, before `nextBatch`: the source reports its rebalances through these.
    func setRebalanceHandlers(_ handlers: RebalanceHandlers)
    /// Waits up to `timeout` for records, then returns what is there, at most `max`.
    func nextBatch(max: Int, timeout: Duration) async -> SourceBatch
    /// The records already there, at most `max`, without waiting (empty when none are, or when
    /// the source cannot tell without waiting): the pipeline takes them on its loop, with no task.
    func takeReady(max: Int) -> [KafkaMessage]
    /// Stores the next offsets to read; throws when the store refuses them.
    func commit(_ offsets: [TopicPartitionOffset]) async throws
    /// Records behind the end of what this member owns, as far as the source knows.
    var lag: Int64 { get }
    /// Stops fetching these partitions (records already fetched may still come) until `resume`;
    /// a partition that leaves forgets its pause. Throws when the source cannot now (it has
    /// stopped): the pipeline logs it and goes on.
    func pause(_ partitions: [TopicPartition]) throws
    func resume(_ partitions: [TopicPartition]) throws
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

/// What one failed attempt of a send that is still retrying says about the hub.
public enum AttemptFailure: Sendable, Equatable {
    /// No answer at all (refused connection, timeout, DNS) from hub number `hub`: it may be gone.
    case noAnswer(reason: String, hub: Int = 0)
}

/// Delivers one send and says how it ended: the hub client in production, a script in tests.
public protocol Sender: Sendable {
    associatedtype Send: Sendable
    func deliver(_ send: Send) async -> PipelineEngine<Send>.Outcome
    /// Starts `send` without a task of its own where it can: `finished` then hears how it ended,
    /// once, from any thread. False when it cannot: the pipeline runs `deliver` in a task.
    func start(_ send: Send, finished: @escaping @Sendable (PipelineEngine<Send>.Outcome) -> Void) -> Bool
    /// For shutdown: ends every send `start` began and has not finished (as `.abandoned` unless
    /// it ended otherwise first). A send the hub accepted whose ledger record is being stored
    /// ends when it is stored or given up (the ledger's 5 s at most).
    func abandonStarted()
    /// An attempt failed while its send still retries; the pipeline installs this, so the engine
    /// stops starting sends when the hub stops answering, without waiting for every retry of the
    /// sends in flight. (Throttling is not heard here: a throttled send ends, for the pacer.)
    func onAttemptFailed(_ listener: @escaping @Sendable (AttemptFailure) -> Void)
    /// Brings the sender's own gauges up to date (called on every tick, off the send path).
    func refreshMetrics()
}

extension Sender {
    /// Every send in a task of its own, which the pipeline cancels to abandon it.
    public func start(_ send: Send, finished: @escaping @Sendable (PipelineEngine<Send>.Outcome) -> Void) -> Bool {
        false
    }

    public func abandonStarted() {}
}

/// Carries reports between the instances that send to one hub, so that they share its quota:
/// a Kafka topic in `run`, memory in tests.
public protocol QuotaExchange: Sendable {
    /// Called once, before the first `publish`: every report heard goes to `handler`, this
    /// instance's own too (it tells that the exchange works, how long it takes, and what the
    /// others have of this instance's ask).
    func onReport(_ handler: @escaping @Sendable (QuotaReport) -> Void)
    /// Hands this instance's report to the medium; never waits for it.
    func publish(_ report: QuotaReport)
}

/// Who this instance is to the others sending to its hub, and how it talks to them.
public struct QuotaSharing: Sendable {
    /// Where `run` instances share a hub's quota unless told otherwise.
    public static let defaultTopic = "hubcast.quota"

    public var exchange: any QuotaExchange
    /// Unique per process.
    public var instance: String
    /// Each hub's namespace and name (the quota's owner), by hub number.
    public var hubs: [String]
    /// The first hub's.
    public var hub: String { hubs[0] }
    /// How often reports go out and shares are recomputed.
    public var interval: Duration = .milliseconds(250)
    public var share = QuotaShare.Configuration()

    public init(exchange: any QuotaExchange, instance: String, hub: String) {
        self.init(exchange: exchange, instance: instance, hubs: [hub])
    }

    /// `hubs`: by hub number, never empty.
    public init(exchange: any QuotaExchange, instance: String, hubs: [String]) {
        self.exchange = exchange
        self.instance = instance
        self.hubs = hubs.isEmpty ? [""] : hubs
    }

    /// A name for this process, unique among the instances: host, pid and a random part (a
    /// restarted process is a new instance). The host is gethostname's, not Foundation's
    /// `hostName`, which resolves it through DNS and can hold the start-up for seconds.
    public static func uniqueInstance() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        let host =
            gethostname(&buffer, buffer.count - 1) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "host"
        return "\(host)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }
}
