/// Who may touch a librdkafka handle: calls enter while it is open, it closes once, and it is
/// destroyed exactly once, after the last call in progress has left. After close every call throws
/// instead of touching a destroyed handle.
struct HandleLifecycle: Sendable, Equatable {
    enum State: Sendable, Equatable {
        case open(users: Int)
        /// No new call enters; `destroy` waits for the ones in progress.
        case closing(users: Int)
        case destroyed
    }

    private(set) var state: State = .open(users: 0)

    /// A call wants the handle: true if it may use it (then it must `leave`).
    mutating func enter() -> Bool {
        guard case .open(let users) = state else { return false }
        state = .open(users: users + 1)
        return true
    }

    /// A call is done with the handle: true if it was the last one `destroy` waits for (it is to
    /// be woken).
    @discardableResult
    mutating func leave() -> Bool {
        switch state {
        case .open(let users):
            state = .open(users: max(0, users - 1))
            return false
        case .closing(let users):
            state = .closing(users: max(0, users - 1))
            return users == 1
        case .destroyed:
            return false
        }
    }

    /// What `destroy` should do now.
    enum CloseAction: Equatable {
        case destroyNow
        case waitForUsers
        /// Already destroyed (or being destroyed by another caller).
        case nothing
    }

    /// Closes to new calls; `destroyNow` exactly once, when no call is in progress.
    mutating func close() -> CloseAction {
        switch state {
        case .open(let users), .closing(let users):
            if users == 0 {
                state = .destroyed
                return .destroyNow
            }
            state = .closing(users: users)
            return .waitForUsers
        case .destroyed:
            return .nothing
        }
    }

    var isOpen: Bool { if case .open = state { true } else { false } }

    /// Closing, with calls still in progress.
    var isWaitingForUsers: Bool { if case .closing(let users) = state { users > 0 } else { false } }
}
