import Kafka
import News

/// Where a record came from. A file source uses one synthetic partition with line numbers as offsets.
public struct RecordPosition: Hashable, Sendable, CustomStringConvertible {
    public var partition: TopicPartition
    public var offset: Int64

    public init(_ partition: TopicPartition, offset: Int64) {
        self.partition = partition
        self.offset = offset
    }

    public var description: String { "\(partition)@\(offset)" }
}

extension PipelineEngine {
    /// How the engine batches, bounds, commits and waits.
    public struct Configuration: Sendable {
        /// Sends in flight at most, per hub: a cap; the pacer's rate is what adapts to the hub.
        public var maxInFlight = 64
        /// How sends are paced to the hub's quota (learnt from throttling, or a known `maxRate`).
        public var pacing = HubPacer.Configuration()
        /// Each hub's pacing, by hub number, when the engine sends to several with different
        /// quotas; empty: `pacing` for every hub.
        public var hubPacing: [HubPacer.Configuration] = []
        /// Most records asked of the source at once (fewer when the queue has less room).
        public var batchSize = 100
        /// Jobs waiting for a slot before the engine stops asking the source for more: the
        /// source's own buffer then fills and it pauses its partitions (backpressure).
        public var maxQueued = 1000
        /// One start in this many goes to a lower priority that has sends waiting (its floor).
        public var reserveEvery = 20
        /// A partition is paused at the source once it has about this long of sends waiting at
        /// the current pace, and resumed at half: its backlog waits in Kafka, not ahead of the
        /// other partitions' records.
        public var laneSeconds = 2.0
        /// ...and never below this many sends waiting.
        public var minLaneDepth = 100
        public var commitInterval: Duration = .seconds(1)
        /// How long leaving partitions' sends may take before the partitions go anyway.
        public var revokeTimeout: Duration = .seconds(10)
        /// On shutdown, how long in-flight sends may take before they are abandoned (uncommitted).
        public var drainTimeout: Duration = .seconds(30)
        /// While the hub is unavailable, how often one held send probes it.
        public var probeInterval: Duration = .seconds(2)
        /// While the hub is unavailable, how often that is reported.
        public var hubReportInterval: Duration = .seconds(60)
        /// How long the hub must have answered nothing before sends it did not answer make it
        /// unavailable: a dropped connection among answered sends is the network's blip (the send
        /// goes again), not an outage that should pause every send.
        public var noAnswerWindow: Duration = .seconds(5)
        /// Stop once the source has been idle this long with nothing in flight (demo, tests); nil: never.
        public var stopWhenIdle: Duration?

        public init() {}

        func pacing(ofHub hub: Int) -> HubPacer.Configuration {
            hubPacing.indices.contains(hub) ? hubPacing[hub] : pacing
        }

        /// Paces each of `count` hubs as `pacing` says, but for a known quota of its own where
        /// `maxRates` gives one (by hub number). Set `pacing` first.
        public mutating func paceHubs(count: Int, maxRates: [Double?]) {
            guard count > 1 || maxRates.contains(where: { $0 != nil }) else {
                hubPacing = []
                return
            }
            hubPacing = (0..<count).map { hub in
                var own = pacing
                if maxRates.indices.contains(hub), let rate = maxRates[hub] { own.maxRate = rate }
                return own
            }
        }
    }

    /// Identifies a send or a dead-letter write handed to the shell.
    public typealias JobID = Int
    /// Identifies one revoke, chosen by the shell, echoed in `completeRevoke`.
    public typealias RevokeID = Int

    /// What one record needs.
    public enum Work: Sendable {
        /// Nothing to send: expired, a duplicate, filtered out.
        case done
        /// Invalid input: store it in the dead-letter sink.
        case deadLetter(DeadLetterRecord)
        /// These sends, each to be delivered or dead-lettered; `freshFor`: how long they may still
        /// start (a stale send still starts, without a token, for the sender to dead-letter);
        /// `hub`: the number of the hub they go to.
        case sends([Send], priority: Priority = .normal, freshFor: Duration? = nil, hub: Int = 0)
    }

    public struct Record: Sendable {
        public var position: RecordPosition
        public var work: Work

        public init(position: RecordPosition, work: Work) {
            self.position = position
            self.work = work
        }
    }

    /// How one send ended.
    public enum Outcome: Sendable {
        case delivered
        /// The item's fault (400, 404, 413, retries exhausted on 5xx): dead-letter it.
        case failed(DeadLetterRecord)
        /// The hub's fault (credentials refused, TLS, DNS, no answer): hold the send, pause, probe.
        /// `noAnswer`: every attempt went unanswered (connection dropped or refused, timed out),
        /// which says something of the hub only if other sends got no answer either.
        case hubUnavailable(reason: String, noAnswer: Bool = false)
        /// Throttled (429, quota 403): the hub's pacing pauses, the send goes again; never dead-lettered.
        case throttled(retryAfter: Duration?)
        /// Cancelled at shutdown: unfinished, read again later.
        case abandoned
        /// Finished without a word about the hub (a canary refused for good or past its deadline,
        /// reported elsewhere): its record may commit; the hub's state and pace learn nothing.
        case finishedElsewhere
    }

    /// What the shell must do; it performs actions in order, outside any lock.
    public enum Action: Sendable {
        case send(JobID, Send)
        case writeDeadLetter(JobID, DeadLetterRecord)
        /// Ask the source for up to `max` records (one fetch at a time).
        case fetch(max: Int)
        /// Stop fetching these partitions: their sends waiting last a while. Records already
        /// fetched still come.
        case pause([TopicPartition])
        case resume([TopicPartition])
        /// Commit these offsets (the next offset to read per partition); report with `commitFinished`.
        case commit([TopicPartitionOffset])
        /// Commit these synchronously, then let the revoked partitions go.
        case completeRevoke(RevokeID, commit: [TopicPartitionOffset])
        case reportHubUnavailable(hub: Int, reason: String, since: Duration)
        /// The hub answered again; `heldSends` were waiting for it, `failedProbes` had found it still down.
        case reportHubAvailable(hub: Int, after: Duration, heldSends: Int, failedProbes: Int)
        /// Cancel every job still running (their outcomes no longer matter).
        case cancelInFlight
        /// Flush the dead-letter sink, commit these offsets, and stop.
        case finish(commit: [TopicPartitionOffset])
    }

    /// Where the engine is in its life.
    public enum Phase: Sendable, Equatable {
        case running
        /// Shutdown was asked for: nothing new starts; in-flight jobs get until `deadline`.
        case draining(deadline: Duration)
        case finished
    }

    /// The hub as the engine sees it.
    public enum HubState: Sendable, Equatable {
        case available
        case unavailable(since: Duration, reason: String)
    }
}
