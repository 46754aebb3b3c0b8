import Kafka

/// Hears what the pipeline reports about its hubs (the engine's `reportHubUnavailable` and
/// `reportHubAvailable`, with the hub's name), for readiness probes, and revokes it gave up
/// waiting for. Called on the pipeline's loop or the consumer's poll thread: it must return at once.
public struct PipelineObserver: Sendable {
    public var hubUnavailable: @Sendable (_ hub: String, _ reason: String) -> Void
    public var hubAvailable: @Sendable (_ hub: String) -> Void
    /// A revoke the engine did not answer in time: these partitions went with nothing committed.
    public var revokeGaveUp: @Sendable (_ partitions: [TopicPartition]) -> Void

    public init(
        hubUnavailable: @escaping @Sendable (_ hub: String, _ reason: String) -> Void = { _, _ in },
        hubAvailable: @escaping @Sendable (_ hub: String) -> Void = { _ in },
        revokeGaveUp: @escaping @Sendable (_ partitions: [TopicPartition]) -> Void = { _ in }
    ) {
        self.hubUnavailable = hubUnavailable
        self.hubAvailable = hubAvailable
        self.revokeGaveUp = revokeGaveUp
    }
}
