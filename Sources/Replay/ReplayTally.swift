import Synchronization

/// The replay's counts, its sends not yet settled, and dry-run examples, shared by its preparer
/// and sender and read by the progress line and the summary.
final class ReplayTally: Sendable {
    private struct State {
        var counts = ReplayCounts()
        var nextTicket = 0
        /// Sends handed to the engine and neither accepted nor dead-lettered yet, by ticket.
        var pending: [Int: ReplaySend] = [:]
    }

    private let state = Mutex(State())
    private let examples = Mutex<[String]>([])
    let maxExamples: Int

    init(maxExamples: Int) {
        self.maxExamples = maxExamples
    }

    var result: ReplayCounts { state.withLock { $0.counts } }
    var dryRunExamples: [String] { examples.withLock { $0 } }
    /// What was planned and not settled, in the order it was planned.
    var pending: [ReplaySend] { state.withLock { $0.pending.values.sorted { $0.ticket < $1.ticket } } }

    func count(_ update: (inout ReplayCounts) -> Void) {
        state.withLock { update(&$0.counts) }
    }

    func nextTicket() -> Int {
        state.withLock { state in
            defer { state.nextTicket += 1 }
            return state.nextTicket
        }
    }

    func planned(_ sends: [ReplaySend]) {
        state.withLock { state in
            for send in sends { state.pending[send.ticket] = send }
        }
    }

    /// One send is done (accepted or dead-lettered again): counted, and no longer pending.
    func settled(_ ticket: Int, _ update: (inout ReplayCounts) -> Void) {
        state.withLock { state in
            state.pending[ticket] = nil
            update(&state.counts)
        }
    }

    func example(_ text: @autoclosure () -> String) {
        examples.withLock { list in
            if list.count < maxExamples { list.append(text()) }
        }
    }
}
