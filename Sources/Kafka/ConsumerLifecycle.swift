/// Where a consumer is in its life. Every public call of `KafkaConsumer` asks this value first, so
/// that a call in the wrong state throws `KafkaError.wrongState` naming the call and the state,
/// instead of reaching librdkafka (or doing nothing, silently).
///
/// created → running (`run`) → closing (`stop`, a graceful shutdown, cancellation) → closed (the
/// member has left its group and the handle is destroyed). A consumer stopped before it ran goes
/// straight to closed.
struct ConsumerLifecycle: Sendable, Equatable {
    enum State: String, Sendable {
        case created, running, closing, closed
    }

    /// The calls that depend on the state.
    enum Call: String, Sendable {
        case run, commit, committed, pause, resume, checkReachable
    }

    private(set) var state: State = .created

    /// `run` joins the group: once, from created.
    mutating func start() throws(KafkaError) {
        guard state == .created else { throw .wrongState(call: Call.run.rawValue, state: state.rawValue) }
        state = .running
    }

    /// What a stop does: true when a poll loop is running and must be told to end.
    mutating func stop() -> Bool {
        switch state {
        case .created:
            state = .closed
            return false
        case .running:
            state = .closing
            return true
        case .closing, .closed:
            return false
        }
    }

    /// The poll loop has left the group and destroyed the handle.
    mutating func closed() { state = .closed }

    /// Throws unless `call` makes sense now. A commit needs a member (running, or closing: the
    /// pipeline's last commit comes after the stop was asked for, before the member leaves);
    /// pausing and resuming need assigned partitions, so a running member; reading committed
    /// offsets and checking the brokers need only an open handle.
    func check(_ call: Call) throws(KafkaError) {
        let allowed: Bool =
            switch call {
            case .run: state == .created
            case .commit: state == .running || state == .closing
            case .pause, .resume: state == .running
            case .committed, .checkReachable: state != .closed
            }
        guard allowed else { throw .wrongState(call: call.rawValue, state: state.rawValue) }
    }
}
