import CRdKafka
import Foundation
import Synchronization

/// The group consumer's assigned partitions, each read from a queue of its own.
///
/// By default librdkafka forwards every assigned partition's fetched messages into the one
/// consumer queue, in the order they were fetched, and measures that whole queue against each
/// partition's `queued.min.messages`: a flooded category fills it, then no partition is fetched,
/// and a quiet category's item, once fetched, waits behind everything ahead of it (a breaking item
/// behind 800 bulk ones, measured). A partition's queue forwarded nowhere by the application
/// stays apart (librdkafka does not forward it again when the partition starts fetching) and is
/// measured alone, so a quiet partition is fetched whatever the others hold, and the poll loop
/// takes from the partitions in turn.
///
/// A queue that turns non-empty writes a byte into a pipe (librdkafka's io event), so the poll
/// loop waits on one descriptor for any partition's messages and the consumer queue's events.
///
/// Its C pointers never leave this file and `RDKafkaClient`; every call is under `state`'s lock,
/// and the owner calls `releaseAll` before the handle is closed.
final class PartitionQueues: Sendable {
    // Unchecked: librdkafka's queue handles are C pointers, which the compiler cannot see shared
    // safely. They are: they live only in this state and are used only under its lock.
    private struct State: @unchecked Sendable {
        /// In the order the poll loop visits them.
        var queues: [(partition: TopicPartition, queue: OpaquePointer)] = []
        /// The partition the next turn starts with: the one after the last that gave messages.
        var next = 0
        var consumerQueue: OpaquePointer?
    }

    private let state: Mutex<State>
    private let readEnd: Int32
    private let writeEnd: Int32
    private static let wakeByte: [UInt8] = [1]

    init(handle: OpaquePointer) throws(KafkaError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw .configuration("the consumer could not create its wake-up pipe: \(String(cString: strerror(errno)))")
        }
        // librdkafka writes from its own threads and must never block on a full pipe; the poll
        // loop reads it empty without blocking; a child process (a hook, a probe) inherits neither.
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
        let consumerQueue = rd_kafka_queue_get_consumer(handle)
        if let consumerQueue { Self.enableWake(consumerQueue, writeEnd) }
        state = Mutex(State(consumerQueue: consumerQueue))
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    private static func enableWake(_ queue: OpaquePointer, _ fd: Int32) {
        wakeByte.withUnsafeBytes { rd_kafka_queue_io_event_enable(queue, fd, $0.baseAddress, $0.count) }
    }

    /// Takes these partitions out of the consumer queue; call before they are assigned, so that no
    /// message of theirs goes there first.
    func adopt(_ partitions: [TopicPartition], handle: OpaquePointer) -> [TopicPartition] {
        var missing: [TopicPartition] = []
        state.withLock { state in
            for partition in partitions where !state.queues.contains(where: { $0.partition == partition }) {
                guard let queue = rd_kafka_queue_get_partition(handle, partition.topic, partition.partition) else {
                    missing.append(partition)
                    continue
                }
                rd_kafka_queue_forward(queue, nil)
                Self.enableWake(queue, writeEnd)
                state.queues.append((partition, queue))
            }
        }
        return missing
    }

    /// Lets go of these partitions' queues (nil: all of them) once they are unassigned. What is
    /// left in them is not ours any more, and is freed now: the queue, forwarded nowhere, would
    /// otherwise keep it until the partition came back.
    func release(_ partitions: Set<TopicPartition>?) {
        state.withLock { state in
            state.queues.removeAll { entry in
                guard partitions?.contains(entry.partition) ?? true else { return false }
                while let message = rd_kafka_consume_queue(entry.queue, 0) { rd_kafka_message_destroy(message) }
                Self.destroy(entry.queue)
                return true
            }
        }
    }

    /// Lets go of every queue, the consumer queue's too: librdkafka requires it before the
    /// consumer is closed.
    func releaseAll() {
        state.withLock { state in
            for entry in state.queues { Self.destroy(entry.queue) }
            state.queues.removeAll()
            if let consumerQueue = state.consumerQueue { Self.destroy(consumerQueue) }
            state.consumerQueue = nil
        }
    }

    private static func destroy(_ queue: OpaquePointer) {
        rd_kafka_queue_io_event_enable(queue, -1, nil, 0)
        rd_kafka_queue_destroy(queue)
    }

    /// Takes up to `limit` messages, the partitions taking turns: each gives up to its share of
    /// the room (`each` at most) in a pass, and passes go on while there is room and a partition
    /// gave all it was asked for; the partitions `skip` names give nothing. Hands each message to
    /// `body` (which must not keep the pointer); true if a queue may still hold more.
    ///
    /// One message a call (`rd_kafka_consume_queue`): librdkafka 2.0's batch call can lose
    /// messages when a partition is paused during it, and its own group thread pauses every
    /// partition at the start of a cooperative rebalance.
    func take(
        each: Int,
        limit: Int,
        skip: (TopicPartition) -> Bool = { _ in false },
        _ body: (UnsafeMutablePointer<rd_kafka_message_t>) -> Void
    ) -> Bool {
        state.withLock { state in
            let count = state.queues.count
            guard count > 0, limit > 0 else { return count > 0 }
            // When room is short (the buffer near full) every partition still gets its part of it.
            let share = max(1, min(each, limit / count))
            var taken = 0
            var more = true
            while more, taken < limit {
                more = false
                let first = state.next % count
                for step in 0..<count {
                    let room = min(share, limit - taken)
                    guard room > 0 else { return true }
                    let entry = state.queues[(first + step) % count]
                    if skip(entry.partition) { continue }
                    var got = 0
                    while got < room, let message = rd_kafka_consume_queue(entry.queue, 0) {
                        body(message)
                        rd_kafka_message_destroy(message)
                        got += 1
                    }
                    taken += got
                    if got == room { more = true }
                    // The next turn starts after the last partition that gave: an empty one's
                    // turn must not pass to its neighbour again and again.
                    if got > 0 { state.next = first + step + 1 }
                }
            }
            return more
        }
    }

    /// The most messages any one partition's queue holds.
    func fullest() -> Int {
        state.withLock { state in state.queues.reduce(0) { max($0, Int(rd_kafka_queue_length($1.queue))) } }
    }

    /// The messages fetched for this partition and not yet taken.
    func queued(_ partition: TopicPartition) -> Int {
        state.withLock { state in
            state.queues.first { $0.partition == partition }.map { Int(rd_kafka_queue_length($0.queue)) } ?? 0
        }
    }

    /// Waits up to `timeoutMs` for a queue that was empty to receive something (a message, or an
    /// event on the consumer queue). A queue already holding messages does not write again, so
    /// with messages left in a queue (the poll loop held while the pipeline catches up) it is
    /// a wait of `timeoutMs` that ends early when another queue or the events turn non-empty.
    func wait(timeoutMs: Int32) {
        var descriptor = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, timeoutMs) > 0 else { return }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { bytes in
            while read(readEnd, bytes.baseAddress, 64) > 0 {}
        }
    }
}
