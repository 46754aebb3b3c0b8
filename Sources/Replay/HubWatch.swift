import Synchronization

/// How long the hub has been unavailable, from the pipeline's reports: once it has been so for
/// longer than the limit, `onLimit` is called (once per spell). A batch job stops there instead
/// of holding its sends for as long as it runs.
final class HubWatch: Sendable {
    private struct State {
        var problem: String?
        var lastProblem: String?
        var timer: Task<Void, Never>?
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

    func unavailable(_ reason: String) {
        state.withLock { state in
            state.problem = reason
            state.lastProblem = reason
            guard state.timer == nil, let limit else { return }
            state.timer = Task { [weak self] in
                try? await Task.sleep(for: limit)
                guard !Task.isCancelled, let self else { return }
                let (problem, action) = self.state.withLock { ($0.problem, $0.onLimit) }
                if let problem { action?(problem) }
            }
        }
    }

    func available() {
        state.withLock { state in
            state.problem = nil
            state.timer?.cancel()
            state.timer = nil
        }
    }
}
