import Broadcast
import Synchronization

/// A dead-letter sink in memory that can be told to refuse writes.
final class MemoryDeadLetters: DeadLetterSink, Sendable {
    struct Refused: Error {}
    fileprivate let state = Mutex<(records: [DeadLetterRecord], refuse: Bool)>(([], false))

    func write(_ record: DeadLetterRecord) async throws {
        try state.withLock { s in
            if s.refuse { throw Refused() }
            s.records.append(record)
        }
    }

    func flush() async throws {}

    var records: [DeadLetterRecord] { state.withLock { $0.records } }
}

extension MemoryDeadLetters {
    func refuseAll() { state.withLock { $0.refuse = true } }
}
