import News

/// How the pipeline batches, bounds and commits.
public struct PipelineConfiguration: Sendable {
    public var categories: Categories
    /// Sends in flight at most (the AIMD limiter's ceiling).
    public var concurrency = 64
    /// The limiter's floor under sustained throttling.
    public var minConcurrency = 4
    /// Messages taken from the consumer at once.
    public var batchSize = 500
    /// After the first message of a batch, how long to wait for more.
    public var batchLinger: Duration = .milliseconds(5)
    public var commitInterval: Duration = .seconds(1)
    /// On shutdown, how long in-flight sends may take to finish before they are abandoned (and re-read later).
    public var drainTimeout: Duration = .seconds(30)
    /// Item ids remembered to avoid sending one item twice in a process.
    public var dedupeWindow = 100_000
    public var maxMessageBytes = NewsItemDecoder.defaultMaxMessageBytes
    /// While the hub does not answer at all, how long a held send waits before trying again.
    public var outageRetryInterval: Duration = .seconds(2)
    /// Stop once no message has arrived for this long and nothing is in flight (demo, tests,
    /// benchmarks); nil runs until shut down.
    public var stopWhenIdle: Duration?

    public init(categories: Categories) {
        self.categories = categories
    }
}
