/// Hears what the pipeline reports about the hub (the engine's `reportHubUnavailable` and
/// `reportHubAvailable`), for readiness probes. Called on the pipeline's loop: it must return at once.
public struct PipelineObserver: Sendable {
    public var hubUnavailable: @Sendable (_ reason: String) -> Void
    public var hubAvailable: @Sendable () -> Void

    public init(hubUnavailable: @escaping @Sendable (_ reason: String) -> Void = { _ in },
                hubAvailable: @escaping @Sendable () -> Void = {}) {
        self.hubUnavailable = hubUnavailable
        self.hubAvailable = hubAvailable
    }
}
