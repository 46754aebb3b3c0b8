import Dispatch
import Synchronization

/// Scheduled notifications waiting for their time, each with a timer that delivers it then unless
/// it was cancelled (a cancelled one's timer finds nothing). A dispatch timer, not a sleeping task:
/// the emulator shares a process with tests and the demo, whose cooperative threads may be busy
/// when the time comes.
final class ScheduledSends: Sendable {
    struct Pending: Sendable {
        let hub: String
        let at: Double
        let tagExpression: String?
        let format: String
    }

    private struct State {
        var pending: [String: Pending] = [:]
        var next = 1
        var cancelled = 0
    }

    private let state = Mutex(State())

    /// Holds `send` until `at` (epoch seconds; `now` is the emulator's clock), then hands it to
    /// `deliver` unless cancelled first. The id looks like the service's: digits, `-` and `_`.
    func add(
        _ send: NotificationHubEmulator.AcceptedSend,
        at: Double,
        now: Double,
        deliver: @escaping @Sendable (NotificationHubEmulator.AcceptedSend, String) -> Void
    ) -> String {
        state.withLock { s in
            let id = "\(s.next)-\(UInt32.random(in: 0...UInt32.max))_\(UInt16.random(in: 0...UInt16.max))"
            s.next += 1
            s.pending[id] = Pending(hub: send.hub, at: at, tagExpression: send.tagHeader, format: send.format)
            // Armed under the lock that registers it: it cannot look for its entry before it is there.
            DispatchQueue.global().asyncAfter(
                deadline: .now() + .milliseconds(Int(((at - now) * 1000).rounded(.up)))
            ) { [weak self] in
                guard let self, self.take(id) else { return }
                deliver(send, id)
            }
            return id
        }
    }

    /// Removes a due entry; false if it was cancelled.
    private func take(_ id: String) -> Bool {
        state.withLock { $0.pending.removeValue(forKey: id) != nil }
    }

    /// Cancels one of `hub`'s scheduled notifications; false if it holds no such one.
    func cancel(id: String, hub: String) -> Bool {
        state.withLock { s in
            guard s.pending[id]?.hub == hub else { return false }
            s.pending[id] = nil
            s.cancelled += 1
            return true
        }
    }

    /// What waits, soonest first, and how many were cancelled.
    var snapshot: (pending: [(id: String, entry: Pending)], cancelled: Int) {
        state.withLock { s in
            (s.pending.map { (id: $0.key, entry: $0.value) }.sorted { $0.entry.at < $1.entry.at }, s.cancelled)
        }
    }
}
