import News

/// How the pipeline batches, bounds and commits.
public struct PipelineConfiguration: Sendable {
    public var categories: Categories
    /// Sends in flight at most: a cap, not what adapts to the hub (the pacer's rate does).
    public var concurrency = 64
    /// Accepted sends, per hub, that may end while their ledger record is still being stored (its
    /// 5 ms batching and the broker's answer): past it, an accepted send keeps its slot until
    /// stored. Four times `concurrency` covers that delay at the sends a second 64 slots carried
    /// against a hub answering at once; a SIGKILL repeats at most `concurrency` plus this many.
    public var recordsBehind: Int { concurrency * 4 }
    /// A known quota of the hub, in sends per second: never exceeded. nil: learnt from throttling.
    public var maxRate: Double?
    /// Messages taken from the consumer at once.
    public var batchSize = 100
    /// No longer used: the engine takes a batch as soon as a record arrives and asks for the next
    /// while its pool has room, so holding a batch only added latency. Kept so settings still parse.
    public var batchLinger: Duration = .milliseconds(5)
    public var commitInterval: Duration = .seconds(1)
    /// How long a fetch waits at the broker for data (see `KafkaConsumerConfiguration.fetchWaitMaxMs`).
    public var fetchWaitMs = 3
    /// On shutdown, how long in-flight sends may take to finish before they are abandoned (and re-read later).
    public var drainTimeout: Duration = .seconds(30)
    /// Seconds an accepted send is remembered (in this process, and read back from the ledger) so
    /// that it is not made again.
    public var dedupeWindow: Double = 86_400
    public var maxMessageBytes = NewsItemDecoder.defaultMaxMessageBytes
    /// How long after its Kafka timestamp an item without `expiresAt` may still be sent; nil: no bound.
    public var maxAge: Duration? = .seconds(1200)
    /// The priority of items of these categories that name none (else `normal`).
    public var categoryPriority: [String: Priority] = [:]
    /// Time-to-hub targets (Kafka timestamp to accepted) per priority; a later send is counted.
    public var targets: [Priority: Duration] = [:]
    /// While the hub is unavailable (no answer, credentials or certificate refused), how often one
    /// held send probes it.
    public var outageRetryInterval: Duration = .seconds(2)
    /// On a rebalance, how long the leaving partitions' sends may take before they go anyway.
    public var revokeTimeout: Duration = .seconds(10)
    /// Stop once no message has arrived for this long and nothing is in flight (demo, tests,
    /// benchmarks); nil runs until shut down.
    public var stopWhenIdle: Duration?
    /// The canary topic, consumed beside the categories' when the canary is on.
    public var canaryTopic: String?

    public init(categories: Categories) {
        self.categories = categories
    }
}
