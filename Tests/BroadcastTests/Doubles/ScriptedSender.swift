import Broadcast
import Kafka
import Synchronization

/// Sends are the records' values ("partition/offset"); each waits until the test answers it,
/// unless `auto` answers at once.
final class ScriptedSender: Sender, Sendable {
    private struct State {
        var waiting: [String: CheckedContinuation<PipelineEngine<String>.Outcome, Never>] = [:]
        var started: [String] = []
        var startWaiter: (count: Int, continuation: CheckedContinuation<Void, Never>)?
    }

    private let state = Mutex(State())
    private let auto: @Sendable (String) -> PipelineEngine<String>.Outcome?

    init(auto: @escaping @Sendable (String) -> PipelineEngine<String>.Outcome? = { _ in nil }) {
        self.auto = auto
    }

    func onAttemptFailed(_ listener: @escaping @Sendable (AttemptFailure) -> Void) {}
    func refreshMetrics() {}

    func deliver(_ send: String) async -> PipelineEngine<String>.Outcome {
        if let outcome = auto(send) {
            markStarted(send, waiting: nil)
            return outcome
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Waiting before it counts as started: a test that saw it start can answer it.
                if !markStarted(send, waiting: continuation) { continuation.resume(returning: .abandoned) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiting.removeValue(forKey: send) }
            waiter?.resume(returning: .abandoned)
        }
    }

    /// Records the start (and the waiting continuation, unless cancelled) in one step, then wakes
    /// a test waiting for starts; false if the task was already cancelled.
    @discardableResult
    private func markStarted(
        _ send: String,
        waiting continuation: CheckedContinuation<PipelineEngine<String>.Outcome, Never>?
    ) -> Bool {
        let (registered, woken) = state.withLock { s -> (Bool, CheckedContinuation<Void, Never>?) in
            s.started.append(send)
            var registered = true
            if let continuation {
                if Task.isCancelled { registered = false } else { s.waiting[send] = continuation }
            }
            guard let w = s.startWaiter, s.started.count >= w.count else { return (registered, nil) }
            s.startWaiter = nil
            return (registered, w.continuation)
        }
        woken?.resume()
        return registered
    }

    /// Answers a waiting send.
    func answer(_ send: String, _ outcome: PipelineEngine<String>.Outcome) {
        let waiter = state.withLock { $0.waiting.removeValue(forKey: send) }
        waiter?.resume(returning: outcome)
    }

    /// Waits until `count` sends have started in all.
    func waitForStarted(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { s -> Bool in
                if s.started.count >= count { return true }
                s.startWaiter = (count, continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    var started: [String] { state.withLock { $0.started } }
    var waiting: Set<String> { state.withLock { Set($0.waiting.keys) } }
}

/// Each record is one send: its value.
struct OneSendPerRecord: RecordPreparer {
    func prepare(_ message: KafkaMessage) -> PipelineEngine<String>.Work {
        .sends([String(decoding: message.value, as: UTF8.self)])
    }
}
