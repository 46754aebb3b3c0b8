import Logging

/// The news pipeline's sender: each send goes to the `HubSender` of its hub (`NewsSend.hub`). One
/// hub or several, the pipeline sees one sender; each hub keeps its own client, credentials and
/// counters, and its attempt failures reach the engine with its number.
public final class HubRouter: Sender {
    /// By hub number; never empty.
    public let hubs: [HubSender]

    public init(_ hubs: [HubSender]) {
        precondition(!hubs.isEmpty, "a router needs a hub")
        self.hubs = hubs
    }

    /// What every hub's sends share: the sends remembered as delivered.
    public var delivered: DeliveredSends { hubs[0].delivered }

    private func sender(of send: NewsSend) -> HubSender { hubs[hubs.indices.contains(send.hub) ? send.hub : 0] }

    public func deliver(_ send: NewsSend) async -> PipelineEngine<NewsSend>.Outcome {
        await sender(of: send).deliver(send)
    }

    public func start(
        _ send: NewsSend,
        finished: @escaping @Sendable (PipelineEngine<NewsSend>.Outcome) -> Void
    ) -> Bool {
        sender(of: send).start(send, finished: finished)
    }

    public func abandonStarted() {
        for hub in hubs { hub.abandonStarted() }
    }

    public func onAttemptFailed(_ listener: @escaping @Sendable (AttemptFailure) -> Void) {
        for hub in hubs { hub.onAttemptFailed(listener) }
    }

    public func refreshMetrics() {
        for hub in hubs { hub.refreshMetrics() }
    }

    /// The canary goes through the first hub.
    public func attach(_ canary: Canary) { hubs[0].attach(canary) }
}
