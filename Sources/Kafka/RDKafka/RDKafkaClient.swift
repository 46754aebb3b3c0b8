import CRdKafka
import Foundation
import Logging
import Synchronization

/// Owns one `rd_kafka_t` handle; the only place (with `RDKafkaMockCluster` and `PropertyScopes`)
/// that calls librdkafka.
///
/// Unchecked: the handle is a C pointer, which the compiler cannot see shared safely. It is:
/// librdkafka's calls are thread-safe; the consumer's calls from other threads (commit, committed
/// offsets, lag, metadata) go through `lifecycle`, which keeps them before `destroy` (later ones
/// throw), and the rest run only while their owner holds this object, so before `deinit`. The one
/// other mutable field, `topicNames`, is touched only by the poll thread (`poll`,
/// `takeFromPartitions`; the rebalance callback runs inside them). Exercised from
/// many threads at once by `ConsumerGroupTests` and the multi-instance tests; the thread
/// sanitizer cannot run it (librdkafka's C11 threads escape it).
final class RDKafkaClient: @unchecked Sendable {
    enum Role { case consumer, producer }

    /// What a rebalance callback tells the consumer.
    enum Rebalance { case assign, revoke }

    /// One result of polling the consumer.
    enum PollResult {
        case message(KafkaMessage)
        /// The partition has no more messages for now (only with `enable.partition.eof`).
        case endOfPartition(TopicPartition)
        case error(KafkaError)
        case nothing
    }

    /// What librdkafka's callbacks reach through the handle's opaque pointer.
    final class Callbacks: Sendable {
        private struct Owner { weak var client: RDKafkaClient? }

        let logger: Logger
        let onRebalance: (@Sendable (Rebalance, [TopicPartition]) -> [TopicPartitionOffset])?
        let onRevokeCommitFailed: (@Sendable ([TopicPartitionOffset], KafkaError) -> Void)?
        // Set once the handle exists; the rebalance callback must assign through the client
        // that owns the handle.
        private let owner = Mutex(Owner())

        init(
            logger: Logger,
            onRebalance: (@Sendable (Rebalance, [TopicPartition]) -> [TopicPartitionOffset])?,
            onRevokeCommitFailed: (@Sendable ([TopicPartitionOffset], KafkaError) -> Void)?
        ) {
            self.logger = logger
            self.onRebalance = onRebalance
            self.onRevokeCommitFailed = onRevokeCommitFailed
        }

        var client: RDKafkaClient? {
            get { owner.withLock { $0.client } }
            set { owner.withLock { $0.client = newValue } }
        }
    }

    private let handle: OpaquePointer
    private let callbacks: Callbacks
    private let lifecycle = Mutex(HandleLifecycle())
    /// `destroy` waits on it for the last call in progress; taken around the look at `lifecycle`
    /// and around the wake, so that a wake between the look and the wait is not lost.
    private let lastUserLeft = NSCondition()
    // The poll thread alone reads messages, so the topic name cache needs no lock.
    private var topicNames: [OpaquePointer: String] = [:]
    /// A group consumer's partitions, each read from a queue of its own (nil for the topic
    /// reader, whose assigned partitions share the consumer queue).
    private let partitionQueues: PartitionQueues?
    /// Where each assigned partition's reading starts, looked up when it is assigned: librdkafka
    /// knows a partition's position only once one of its messages was consumed, and a partition
    /// read to its end before it came here (a quiet category, after a rebalance or a restart) has
    /// none to consume. Counted from its first offset instead, its whole history was lag.
    private let startOffsets = Mutex<[TopicPartition: StartOffset]>([:])
    /// Set before the consumer closes: an assignment then is being dropped, and librdkafka answers
    /// a committed-offsets lookup only when its time is up.
    private let closing = Atomic(false)

    private enum StartOffset {
        /// The group's committed offset, or the offset the topic reader was asked to start at.
        case at(Int64)
        /// Nothing committed, or the lookup failed: counted from the partition's first offset, too
        /// high rather than hiding a backlog from an alert on lag.
        case fromFirst
    }

    init(
        role: Role,
        properties: [String: String],
        logger: Logger,
        onRebalance: (@Sendable (Rebalance, [TopicPartition]) -> [TopicPartitionOffset])? = nil,
        onRevokeCommitFailed: (@Sendable ([TopicPartitionOffset], KafkaError) -> Void)? = nil
    ) throws(KafkaError) {
        let conf = rd_kafka_conf_new()!
        var errorText = [CChar](repeating: 0, count: 512)
        for (key, value) in properties.sorted(by: { $0.key < $1.key }) where PropertyScopes.applies(key, to: role) {
            let result = rd_kafka_conf_set(conf, key, value, &errorText, errorText.count)
            if result != RD_KAFKA_CONF_OK {
                rd_kafka_conf_destroy(conf)
                let shown = KafkaConfiguration.secretProperties.contains(key) ? "<redacted>" : value
                throw .configuration(
                    "Kafka property \(key)=\(shown) is not accepted: \(string(errorText))"
                )
            }
        }
        let callbacks = Callbacks(logger: logger, onRebalance: onRebalance, onRevokeCommitFailed: onRevokeCommitFailed)
        rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(callbacks).toOpaque())
        rd_kafka_conf_set_log_cb(conf, rdLogCallback)
        rd_kafka_conf_set_error_cb(conf, rdErrorCallback)
        switch role {
        case .consumer: rd_kafka_conf_set_rebalance_cb(conf, rdRebalanceCallback)
        case .producer: rd_kafka_conf_set_dr_msg_cb(conf, rdDeliveryCallback)
        }
        let type = role == .consumer ? RD_KAFKA_CONSUMER : RD_KAFKA_PRODUCER
        guard let handle = rd_kafka_new(type, conf, &errorText, errorText.count) else {
            rd_kafka_conf_destroy(conf)
            throw .configuration(string(errorText))
        }
        if role == .consumer { rd_kafka_poll_set_consumer(handle) }
        do {
            partitionQueues = role == .consumer && onRebalance != nil ? try PartitionQueues(handle: handle) : nil
        } catch {
            rd_kafka_destroy(handle)
            throw error
        }
        self.handle = handle
        self.callbacks = callbacks
        callbacks.client = self
    }

    deinit { destroy() }

    /// Frees the handle once no call is using it; later calls throw `KafkaError.shutDown`. A consumer
    /// must be closed with `consumerClose()` first. Blocks: call it from a thread, not a task.
    func destroy() {
        while true {
            switch lifecycle.withLock({ $0.close() }) {
            case .destroyNow:
                partitionQueues?.releaseAll()
                rd_kafka_destroy(handle)
                return
            case .waitForUsers:
                // rd_kafka_destroy must not run while another thread is inside a librdkafka call
                // (a commit, committed offsets, lag or metadata), and it blocks, so the last of those calls cannot run it
                // on the cooperative pool: this thread (the consumer's own) waits for it to leave.
                lastUserLeft.lock()
                while lifecycle.withLock({ $0.isWaitingForUsers }) { lastUserLeft.wait() }
                lastUserLeft.unlock()
            case .nothing:
                return
            }
        }
    }

    /// Runs `body` with the handle while it is open; throws `shutDown` once it is closed.
    private func withOpenHandle<T>(_ body: (OpaquePointer) throws(KafkaError) -> T) throws(KafkaError) -> T {
        guard lifecycle.withLock({ $0.enter() }) else { throw .shutDown }
        defer {
            if lifecycle.withLock({ $0.leave() }) {
                lastUserLeft.lock()
                lastUserLeft.broadcast()
                lastUserLeft.unlock()
            }
        }
        return try body(handle)
    }

    /// Asks the cluster for metadata: proves that a broker answers.
    func checkReachable(timeoutMs: Int32) throws(KafkaError) {
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let err = try withOpenHandle { handle throws(KafkaError) in
            rd_kafka_metadata(handle, 0, nil, &metadata, timeoutMs)
        }
        if let metadata { rd_kafka_metadata_destroy(metadata) }
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw .unreachable(
                "no Kafka broker answered within \(timeoutMs) ms: \(String(cString: rd_kafka_err2str(err)))"
            )
        }
    }

    /// Number of partitions of a topic, or nil when the cluster does not know it.
    func partitionCount(topic: String, timeoutMs: Int32) throws(KafkaError) -> Int? {
        guard let rkt = rd_kafka_topic_new(handle, topic, nil) else { return nil }
        defer { rd_kafka_topic_destroy(rkt) }
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let err = rd_kafka_metadata(handle, 0, rkt, &metadata, timeoutMs)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
            throw .rdKafka(err, context: "metadata for \(topic)")
        }
        defer { rd_kafka_metadata_destroy(metadata) }
        guard metadata.pointee.topic_cnt > 0 else { return nil }
        let t = metadata.pointee.topics[0]
        return t.err == RD_KAFKA_RESP_ERR_NO_ERROR ? Int(t.partition_cnt) : nil
    }

    // MARK: Consumer

    func subscribe(topics: [String]) throws(KafkaError) {
        let list = makeList(
            topics.map {
                TopicPartitionOffset(
                    TopicPartition(topic: $0, partition: RD_KAFKA_PARTITION_UA),
                    offset: Int64(RD_KAFKA_OFFSET_INVALID)
                )
            }
        )
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let err = rd_kafka_subscribe(handle, list)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw .rdKafka(err, context: "subscribe to \(topics)") }
    }

    func poll(timeoutMs: Int32) -> PollResult {
        guard let message = rd_kafka_consumer_poll(handle, timeoutMs) else { return .nothing }
        defer { rd_kafka_message_destroy(message) }
        return result(of: message)
    }

    /// Takes up to `each` messages from every assigned partition's own queue in turn, `limit` in
    /// all, none from the partitions `skip` names (a group consumer's; from the poll thread only).
    /// `more` when a queue may hold more.
    func takeFromPartitions(
        each: Int,
        limit: Int,
        skip: (TopicPartition) -> Bool = { _ in false }
    ) -> (results: [PollResult], more: Bool) {
        guard let partitionQueues else { return ([], false) }
        var results: [PollResult] = []
        let more = partitionQueues.take(each: each, limit: limit, skip: skip) { results.append(result(of: $0)) }
        return (results, more)
    }

    /// Waits up to `timeoutMs` for a message or an event (a group consumer's); call after
    /// `poll(timeoutMs: 0)` found nothing and `takeFromPartitions` took everything.
    func waitForMessages(timeoutMs: Int32) {
        partitionQueues?.wait(timeoutMs: timeoutMs)
    }

    /// Messages fetched for this partition and not yet taken (a group consumer's).
    func queuedMessages(_ partition: TopicPartition) -> Int {
        partitionQueues?.queued(partition) ?? 0
    }

    private func result(of message: UnsafeMutablePointer<rd_kafka_message_t>) -> PollResult {
        let m = message.pointee
        if m.err == RD_KAFKA_RESP_ERR__PARTITION_EOF, let rkt = m.rkt {
            return .endOfPartition(TopicPartition(topic: topicName(rkt), partition: m.partition))
        }
        guard m.err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            let topic = m.rkt.map { topicName($0) }
            return .error(.rdKafka(m.err, context: topic.map { "consume from \($0)[\(m.partition)]" }))
        }
        let value: [UInt8] = m.payload.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: m.len)) } ?? []
        let key: [UInt8]? = m.key.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: m.key_len)) }
        var type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let timestamp = rd_kafka_message_timestamp(message, &type)
        return .message(
            KafkaMessage(
                topic: m.rkt.map { topicName($0) } ?? "",
                partition: m.partition,
                offset: m.offset,
                key: key,
                value: value,
                timestampMs: type == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? nil : timestamp
            )
        )
    }

    /// The most messages fetched and not yet taken in any one partition's queue (which
    /// librdkafka measures against `queued.min.messages`).
    func fullestPartitionQueue() -> Int {
        partitionQueues?.fullest() ?? 0
    }

    /// Asks the leader of each of these partitions for its latest offsets (one small request a
    /// broker), which makes that broker's connection look again at once at whether to fetch
    /// (see `FetchWake`). From the poll thread only. The request reaching the connection is the
    /// wake and the answers do not matter, so it waits for them at most `timeoutMs` (a broker
    /// farther away than that is still woken); false if it failed otherwise.
    func wakeFetchers(_ partitions: [TopicPartition], timeoutMs: Int32) -> Bool {
        let list = makeList(partitions.map { TopicPartitionOffset($0, offset: Int64(RD_KAFKA_OFFSET_END)) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let err = rd_kafka_offsets_for_times(handle, list, timeoutMs)
        // Timed out: sent and not yet answered, or a leader not known yet; then nothing is being
        // fetched, the queue does not fill again, and no other wake follows until it does.
        return err == RD_KAFKA_RESP_ERR_NO_ERROR || err == RD_KAFKA_RESP_ERR__TIMED_OUT
    }

    /// Reads these partitions from these offsets, outside any group (the topic reader's).
    func assign(_ offsets: [TopicPartitionOffset]) throws(KafkaError) {
        let list = makeList(offsets)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let err = rd_kafka_assign(handle, list)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw .rdKafka(err, context: "assign") }
        // Logical offsets (the end, the stored one) are not known here: counted from the first read.
        startOffsets.withLock { starts in
            starts = [:]
            for entry in offsets where entry.offset >= 0 { starts[entry.topicPartition] = .at(entry.offset) }
        }
    }

    /// The first offset a partition still holds and the offset its next message will get, as the
    /// partition's leader says now.
    func watermarks(_ partition: TopicPartition, timeoutMs: Int32) throws(KafkaError) -> (low: Int64, high: Int64) {
        var low: Int64 = 0, high: Int64 = 0
        let err = rd_kafka_query_watermark_offsets(
            handle,
            partition.topic,
            partition.partition,
            &low,
            &high,
            timeoutMs
        )
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw .rdKafka(err, context: "watermarks of \(partition.topic)[\(partition.partition)]")
        }
        return (low, high)
    }

    func commit(_ offsets: [TopicPartitionOffset]) throws(KafkaError) {
        guard !offsets.isEmpty else { return }
        let list = makeList(offsets)
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let err = try withOpenHandle { handle throws(KafkaError) in rd_kafka_commit(handle, list, 0) }
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw .rdKafka(err, context: "commit \(offsets)") }
        try checkPartitionErrors(list, context: "commit")
    }

    /// The committed offsets of the given partitions (nil where none is committed).
    func committed(_ partitions: [TopicPartition], timeoutMs: Int32) throws(KafkaError) -> [TopicPartition: Int64] {
        let list = makeList(partitions.map { TopicPartitionOffset($0, offset: Int64(RD_KAFKA_OFFSET_INVALID)) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let err = try withOpenHandle { handle throws(KafkaError) in rd_kafka_committed(handle, list, timeoutMs) }
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw .rdKafka(err, context: "committed offsets") }
        var result: [TopicPartition: Int64] = [:]
        for entry in read(list) where entry.offset >= 0 { result[entry.topicPartition] = entry.offset }
        return result
    }

    /// High watermark minus the consumer's position, summed; cached values, no broker round trip.
    func lag(_ partitions: [TopicPartition]) -> Int64 {
        guard !partitions.isEmpty else { return 0 }
        return (try? withOpenHandle { handle throws(KafkaError) in lag(partitions, handle: handle) }) ?? 0
    }

    private func lag(_ partitions: [TopicPartition], handle: OpaquePointer) -> Int64 {
        let list = makeList(partitions.map { TopicPartitionOffset($0, offset: Int64(RD_KAFKA_OFFSET_INVALID)) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        guard rd_kafka_position(handle, list) == RD_KAFKA_RESP_ERR_NO_ERROR else { return 0 }
        let starts = startOffsets.withLock { $0 }
        var total: Int64 = 0
        for entry in read(list) {
            var low: Int64 = 0, high: Int64 = 0
            guard
                rd_kafka_get_watermark_offsets(
                    handle,
                    entry.topicPartition.topic,
                    entry.topicPartition.partition,
                    &low,
                    &high
                )
                    == RD_KAFKA_RESP_ERR_NO_ERROR, high >= 0
            else { continue }
            let position: Int64
            if entry.offset >= 0 {
                position = entry.offset
            } else {
                switch starts[entry.topicPartition] {
                // Below the first offset when retention removed what was committed: read from there.
                case .at(let offset): position = max(offset, low)
                case .fromFirst: position = low
                case nil: continue
                }
            }
            total += max(0, high - position)
        }
        return total
    }

    func pause(_ partitions: [TopicPartition]) {
        setPaused(partitions, paused: true)
    }

    func resume(_ partitions: [TopicPartition]) {
        setPaused(partitions, paused: false)
    }

    private func setPaused(_ partitions: [TopicPartition], paused: Bool) {
        guard !partitions.isEmpty else { return }
        let list = makeList(partitions.map { TopicPartitionOffset($0, offset: Int64(RD_KAFKA_OFFSET_INVALID)) })
        defer { rd_kafka_topic_partition_list_destroy(list) }
        let err = paused ? rd_kafka_pause_partitions(handle, list) : rd_kafka_resume_partitions(handle, list)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            callbacks.logger.warning("Could not change pause state", metadata: ["error": "\(KafkaError.rdKafka(err))"])
        }
    }

    /// Leaves the group (running the final revoke) and stops fetching.
    func consumerClose() {
        closing.store(true, ordering: .relaxed)
        partitionQueues?.releaseAll()
        let err = rd_kafka_consumer_close(handle)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            callbacks.logger.warning(
                "Consumer close reported an error",
                metadata: ["error": "\(KafkaError.rdKafka(err))"]
            )
        }
    }

    // Called on the poll thread, from inside rd_kafka_consumer_poll.
    fileprivate func rebalance(
        _ err: rd_kafka_resp_err_t,
        _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>
    ) {
        let partitions = read(list).map(\.topicPartition)
        let cooperative = String(cString: rd_kafka_rebalance_protocol(handle)) == "COOPERATIVE"
        switch err {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            // Before the assignment starts their fetches, so none of their messages goes first
            // into the consumer queue (where it would come out of order with the rest).
            let shared = partitionQueues?.adopt(partitions, handle: handle) ?? []
            if !shared.isEmpty {
                callbacks.logger.warning(
                    "Partitions read through the shared queue",
                    metadata: ["partitions": "\(shared)"]
                )
            }
            if cooperative {
                check(rd_kafka_incremental_assign(handle, list), "incremental assign")
            } else {
                check(rd_kafka_assign(handle, list), "assign")
            }
            _ = callbacks.onRebalance?(.assign, partitions)
            lookUpStartOffsets(partitions)
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
            // The application finishes (or abandons) the revoked partitions' work; what it finished
            // is committed here, while the partitions are still ours, before they go.
            let offsets = callbacks.onRebalance?(.revoke, partitions) ?? []
            commitOnRevoke(offsets)
            if cooperative {
                check(rd_kafka_incremental_unassign(handle, list), "incremental unassign")
                forget(Set(partitions))
            } else {
                check(rd_kafka_assign(handle, nil), "unassign")
                forget(nil)
            }
        default:
            callbacks.logger.warning("Rebalance failed", metadata: ["error": "\(KafkaError.rdKafka(err))"])
            commitOnRevoke(callbacks.onRebalance?(.revoke, partitions) ?? [])
            check(rd_kafka_assign(handle, nil), "unassign after a failed rebalance")
            forget(nil)
        }
    }

    /// What is kept for assigned partitions, of these (nil: all of them) once they are unassigned.
    private func forget(_ partitions: Set<TopicPartition>?) {
        partitionQueues?.release(partitions)
        startOffsets.withLock { starts in starts = starts.filter { !(partitions?.contains($0.key) ?? true) } }
    }

    /// One round trip to the group's coordinator per assignment, on the poll thread (as the commit
    /// on revoke is), so at most 2 s: the poll thread also takes the messages. Until it is
    /// answered the partitions count no lag; unanswered, they count from their first offset.
    private func lookUpStartOffsets(_ partitions: [TopicPartition]) {
        guard !partitions.isEmpty, !closing.load(ordering: .relaxed) else { return }
        let committed: [TopicPartition: Int64]
        do throws(KafkaError) {
            committed = try self.committed(partitions, timeoutMs: 2000)
        } catch {
            committed = [:]
            callbacks.logger.info(
                "Committed offsets of newly assigned partitions not known; their lag counts from their first offset until one of their messages is read",
                metadata: ["error": "\(error)"]
            )
        }
        startOffsets.withLock { starts in
            for partition in partitions { starts[partition] = committed[partition].map { .at($0) } ?? .fromFirst }
        }
    }

    private func commitOnRevoke(_ offsets: [TopicPartitionOffset]) {
        do throws(KafkaError) {
            try commit(offsets)
        } catch {
            // A real broker accepts this commit; the dev broker refuses commits during a rebalance.
            callbacks.logger.warning(
                "Commit on revoke failed; the next owner re-reads these partitions from their last commit",
                metadata: ["error": "\(error)", "offsets": "\(offsets)"]
            )
            callbacks.onRevokeCommitFailed?(offsets, error)
        }
    }

    private func check(_ err: rd_kafka_resp_err_t, _ what: String) {
        guard err != RD_KAFKA_RESP_ERR_NO_ERROR else { return }
        callbacks.logger.error(
            "Rebalance step failed",
            metadata: ["step": "\(what)", "error": "\(KafkaError.rdKafka(err))"]
        )
    }

    private func check(_ error: OpaquePointer?, _ what: String) {
        guard let error else { return }
        callbacks.logger.error(
            "Rebalance step failed",
            metadata: ["step": "\(what)", "error": "\(String(cString: rd_kafka_error_string(error)))"]
        )
        rd_kafka_error_destroy(error)
    }

    // MARK: Producer

    /// Enqueues one message; `delivered`, if any, is called by its delivery report (on the thread
    /// that serves `servePoll` or `flush`), exactly once.
    func produce(
        topic: String,
        partition: Int32?,
        key: [UInt8]?,
        value: UnsafeRawBufferPointer,
        headers: [KafkaHeader],
        timestampMs: Int64?,
        delivered: DeliveryBox.Completion?
    ) throws(KafkaError) {
        // Released by the delivery callback, or below when librdkafka refuses the message.
        let box = delivered.map { Unmanaged.passRetained(DeliveryBox(topic: topic, completion: $0)) }
        var rdHeaders: OpaquePointer?
        if !headers.isEmpty {
            rdHeaders = rd_kafka_headers_new(headers.count)
            for header in headers {
                if let v = header.value {
                    v.withUnsafeBytes { _ = rd_kafka_header_add(rdHeaders, header.name, -1, $0.baseAddress, $0.count) }
                } else {
                    _ = rd_kafka_header_add(rdHeaders, header.name, -1, nil, 0)
                }
            }
        }
        let err: rd_kafka_resp_err_t = (key ?? []).withUnsafeBytes { keyBytes in
            hubcast_rd_kafka_produce(
                handle,
                topic,
                partition ?? RD_KAFKA_PARTITION_UA,
                key == nil ? nil : keyBytes.baseAddress,
                key == nil ? 0 : keyBytes.count,
                value.baseAddress,
                value.count,
                rdHeaders,
                timestampMs ?? 0,
                box?.toOpaque()
            )
        }
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            // On success librdkafka owns the headers; on failure they are still ours.
            if let rdHeaders { rd_kafka_headers_destroy(rdHeaders) }
            box?.release()
            throw .rdKafka(err, context: "produce to \(topic)")
        }
    }

    /// Serves delivery reports and error callbacks.
    func servePoll(timeoutMs: Int32) {
        rd_kafka_poll(handle, timeoutMs)
    }

    func flush(timeoutMs: Int32) throws(KafkaError) {
        let err = rd_kafka_flush(handle, timeoutMs)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw .rdKafka(err, context: "flush") }
    }

    /// Gives up every message not yet delivered and serves their delivery reports (each with a
    /// purge error), so no one waiting for one waits for ever once the producer stops.
    func purgeUndelivered() {
        _ = rd_kafka_purge(handle, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
        // Purged messages leave the queues at once; the bound is a guard.
        _ = rd_kafka_flush(handle, 1000)
    }

    // MARK: Helpers

    private func topicName(_ rkt: OpaquePointer) -> String {
        if let name = topicNames[rkt] { return name }
        let name = String(cString: rd_kafka_topic_name(rkt))
        topicNames[rkt] = name
        return name
    }

    private func makeList(_ entries: [TopicPartitionOffset]) -> UnsafeMutablePointer<rd_kafka_topic_partition_list_t> {
        let list = rd_kafka_topic_partition_list_new(Int32(entries.count))!
        for entry in entries {
            let element = rd_kafka_topic_partition_list_add(
                list,
                entry.topicPartition.topic,
                entry.topicPartition.partition
            )!
            element.pointee.offset = entry.offset
        }
        return list
    }

    private func read(_ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) -> [TopicPartitionOffset] {
        (0..<Int(list.pointee.cnt)).map { i in
            let e = list.pointee.elems[i]
            return TopicPartitionOffset(
                TopicPartition(topic: String(cString: e.topic), partition: e.partition),
                offset: e.offset
            )
        }
    }

    private func checkPartitionErrors(
        _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>,
        context: String
    ) throws(KafkaError) {
        for i in 0..<Int(list.pointee.cnt) where list.pointee.elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR {
            let e = list.pointee.elems[i]
            throw .rdKafka(e.err, context: "\(context) \(String(cString: e.topic))[\(e.partition)]")
        }
    }

    fileprivate static func callbacks(of rk: OpaquePointer?) -> Callbacks? {
        guard let rk, let opaque = rd_kafka_opaque(rk) else { return nil }
        return Unmanaged<Callbacks>.fromOpaque(opaque).takeUnretainedValue()
    }

}

/// What a message's delivery report calls, carried through librdkafka as the message's opaque.
final class DeliveryBox: Sendable {
    typealias Completion = @Sendable (Result<DeliveryReport, KafkaError>) -> Void
    let topic: String
    let completion: Completion
    init(topic: String, completion: @escaping Completion) {
        self.topic = topic
        self.completion = completion
    }
}

private func rdLogCallback(
    _ rk: OpaquePointer?,
    _ level: Int32,
    _ facility: UnsafePointer<CChar>?,
    _ text: UnsafePointer<CChar>?
) {
    guard let callbacks = RDKafkaClient.callbacks(of: rk) else { return }
    let logLevel: Logger.Level =
        switch level {
        case ...3: .error
        case 4: .warning
        case 5, 6: .info
        default: .debug
        }
    callbacks.logger.log(
        level: logLevel,
        "librdkafka",
        metadata: [
            "facility": "\(facility.map { String(cString: $0) } ?? "")",
            "message": "\(text.map { String(cString: $0) } ?? "")",
        ]
    )
}

private func rdErrorCallback(
    _ rk: OpaquePointer?,
    _ err: Int32,
    _ reason: UnsafePointer<CChar>?,
    _ opaque: UnsafeMutableRawPointer?
) {
    guard let opaque else { return }
    let callbacks = Unmanaged<RDKafkaClient.Callbacks>.fromOpaque(opaque).takeUnretainedValue()
    let code = rd_kafka_resp_err_t(rawValue: err)
    callbacks.logger.warning(
        "Kafka client error",
        metadata: [
            "error": "\(String(cString: rd_kafka_err2name(code)))",
            "reason": "\(reason.map { String(cString: $0) } ?? "")",
        ]
    )
}

private func rdRebalanceCallback(
    _ rk: OpaquePointer?,
    _ err: rd_kafka_resp_err_t,
    _ list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?,
    _ opaque: UnsafeMutableRawPointer?
) {
    guard let rk, let list else { return }
    guard let client = RDKafkaClient.callbacks(of: rk)?.client else {
        rd_kafka_assign(rk, err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS ? list : nil)
        return
    }
    client.rebalance(err, list)
}

private func rdDeliveryCallback(
    _ rk: OpaquePointer?,
    _ message: UnsafePointer<rd_kafka_message_t>?,
    _ opaque: UnsafeMutableRawPointer?
) {
    guard let message else { return }
    // Produced with no one waiting for its delivery: nothing to tell.
    guard let privatePointer = message.pointee._private else { return }
    let box = Unmanaged<DeliveryBox>.fromOpaque(privatePointer).takeRetainedValue()
    let m = message.pointee
    if m.err == RD_KAFKA_RESP_ERR_NO_ERROR {
        box.completion(.success(DeliveryReport(topic: box.topic, partition: m.partition, offset: m.offset)))
    } else {
        box.completion(.failure(.rdKafka(m.err, context: "deliver to \(box.topic)")))
    }
}

extension RDKafkaClient {
    /// For the mock cluster, which is created from a handle; the pointer stays in this folder.
    func withHandle<T>(_ body: (OpaquePointer) -> T) -> T { body(handle) }
}

/// Text that librdkafka wrote into a zero-terminated buffer.
private func string(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
