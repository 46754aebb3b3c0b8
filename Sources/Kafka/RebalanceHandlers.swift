/// What a consumer tells its application when partitions arrive or leave. Both run on the
/// consumer's poll thread, which may block: it is not a Swift task.
public struct RebalanceHandlers: Sendable {
    public var onAssign: @Sendable ([TopicPartition]) -> Void
    /// Finish the leaving partitions' work and return the offsets to commit before they go; the
    /// consumer commits them synchronously, then lets the partitions go.
    public var onRevoke: @Sendable ([TopicPartition]) -> [TopicPartitionOffset]
    /// The broker refused the commit of what `onRevoke` returned (the consumer has logged it with
    /// the offsets and the broker's error): the next owner reads that work again.
    public var onRevokeCommitFailed: @Sendable ([TopicPartitionOffset], KafkaError) -> Void

    public init(
        onAssign: @escaping @Sendable ([TopicPartition]) -> Void = { _ in },
        onRevoke: @escaping @Sendable ([TopicPartition]) -> [TopicPartitionOffset] = { _ in [] },
        onRevokeCommitFailed: @escaping @Sendable ([TopicPartitionOffset], KafkaError) -> Void = { _, _ in }
    ) {
        self.onAssign = onAssign
        self.onRevoke = onRevoke
        self.onRevokeCommitFailed = onRevokeCommitFailed
    }
}
