import Synchronization

/// How long each hub has been unavailable, from the pipeline's reports: once one has been so for
/// longer than the limit, `onLimit` is called (once per spell). A batch job stops there instead
/// of holding its sends for as long as it runs.
final class HubWatch: Sendable {
    private struct State {
        /// By hub name, while it is unavailable.
        var problems: [String: String] = [:]
        var lastProblem: String?
        var timers: [String: Task<Void, Never>] = [:]
        var onLimit: (@Sendable (String) -> Void)?
    }

    private let state = Mutex(State())
    let limit: Duration?

    init(limit: Duration?) {
        self.limit = limit
    }

    var onLimit: (@Sendable (String) -> Void)? {
        get { state.withLock { $0.onLimit } }
        set { state.withLock { $0.onLimit = newValue } }
    }

    /// The hub's last failure seen while sends were held, if there was one.
    var lastProblem: String? { state.withLock { $0.lastProblem } }

    func unavailable(_ reason: String, hub: String = "hub") {
        state.withLock { state in
            state.problems[hub] = reason
            state.lastProblem = reason
            guard state.timers[hub] == nil, let limit else { return }
            state.timers[hub] = Task { [weak self] in
                try? await Task.sleep(for: limit)
                guard !Task.isCancelled, let self else { return }
                let (problem, action) = self.state.withLock { ($0.problems[hub], $0.onLimit) }
                if let problem { action?(problem) }
            }
        }
    }

    func available(hub: String = "hub") {
        state.withLock { state in
            state.problems[hub] = nil
            state.timers.removeValue(forKey: hub)?.cancel()
        }
    }
}
