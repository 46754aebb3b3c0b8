import Kafka

/// Where the sends the hub accepted are recorded, so that no process sends them again: not after
/// a crash, a rebalance or a restart, nor in a replay. Records are read back when a process takes
/// partitions over.
public protocol DeliveryLedger: Sendable {
    /// Records that the hub accepted the send `key` names, of the record at `source`, and calls
    /// `stored` once the record is stored or could not be (then it is counted in `unrecorded`, and
    /// the send may be made again). Never blocks: `stored` comes later, on another thread. Until
    /// then a SIGKILL would repeat the send: the sender bounds how many ended sends may wait so.
    func record(_ key: LedgerKey, source: TopicPartition, stored: @escaping @Sendable () -> Void)
    /// The sends recorded within the window for items of `partitions` (and whatever else shares
    /// their part of the ledger). Blocks; what cannot be read is logged and left out.
    func recorded(for partitions: [TopicPartition]) -> [RecordedSend]
    /// Every send recorded within the window for this process's hubs. Blocks.
    func recordedAll() -> [RecordedSend]
    /// Waits up to `timeout` until every record written so far is stored. Blocks.
    func flush(timeout: Duration)
    /// Records that could not be written (a full queue, a cluster that refused them).
    var unrecorded: Int { get }
}

extension DeliveryLedger {
    /// `record`, returning once the record is stored (or given up): for a send path that awaits
    /// the hub's answer rather than being called back.
    public func record(_ key: LedgerKey, source: TopicPartition) async {
        await withCheckedContinuation { stored in record(key, source: source) { stored.resume() } }
    }
}

/// A send the ledger holds, by the key this process remembers it by (`LedgerKey.processKey`: 16
/// bytes a send, where the key's four strings were a few hundred when a replay read a million),
/// with when the hub accepted it (epoch seconds).
public struct RecordedSend: Sendable, Equatable {
    public let processKey: Int
    public let at: Double

    public init(processKey: Int, at: Double) {
        self.processKey = processKey
        self.at = at
    }
}
