/// When the consumer must wake librdkafka's fetchers.
///
/// librdkafka stops fetching a partition once its queue holds `queued.min.messages` messages or
/// `queued.max.messages.kbytes`, and looks at the queue again only when its broker connection has
/// something else to do, or after a second (librdkafka 2.0 always; 2.3 made the second
/// `fetch.queue.backoff.ms`). A connection still fetching another partition looks again at each
/// answer; one whose partitions have all stopped (every category flooded, or a broker leading
/// only flooded partitions) would starve the pipeline for most of each second. So once the
/// fullest partition queue was seen full and has drained to half, the consumer gives each leader
/// something to do (a request for its latest offsets), which makes the connection look at its
/// queues, and fetch, at once.
///
/// Only the message count is visible (`rd_kafka_queue_length`); the bytes are estimated from the
/// mean size of the messages polled.
struct FetchWake: Sendable, Equatable {
    /// librdkafka's `queued.min.messages`.
    let messages: Int
    /// librdkafka's `queued.max.messages.kbytes`, in bytes.
    let bytes: Int
    /// A wake that failed is not tried again before this long (a leader down, a timeout).
    let backoffAfterFailure: Duration
    /// The queue was seen full since the last wake.
    private(set) var armed = false
    private(set) var meanMessageBytes: Double = 0
    private var polledAny = false
    private var notBefore: Duration = .zero

    init(messages: Int, bytes: Int, backoffAfterFailure: Duration = .seconds(1)) {
        self.messages = max(1, messages)
        self.bytes = max(1, bytes)
        self.backoffAfterFailure = backoffAfterFailure
    }

    /// librdkafka's own defaults where the properties leave them out or cannot be read.
    init(properties: [String: String]) {
        let messages = properties["queued.min.messages"].flatMap { Int($0) } ?? 100_000
        let kbytes = properties["queued.max.messages.kbytes"].flatMap { Int($0) } ?? 65_536
        self.init(messages: messages, bytes: kbytes.multipliedReportingOverflow(by: 1024).partialValue)
    }

    /// A message of this many bytes (key and value) was polled.
    mutating func polled(messageBytes: Int) {
        // A moving mean over about the last 64 messages: what the queue holds now. The first
        // message sets it, or large items would pass for empty ones until the mean caught up.
        guard polledAny else {
            polledAny = true
            meanMessageBytes = Double(messageBytes)
            return
        }
        meanMessageBytes += (Double(messageBytes) - meanMessageBytes) / 64
    }

    /// The fullest partition queue holds `count` messages at `now`; true when the fetchers must be
    /// woken now.
    mutating func queued(_ count: Int, now: Duration) -> Bool {
        let estimatedBytes = Double(count) * meanMessageBytes
        if isNearFull(count) {
            armed = true
            return false
        }
        guard armed, count * 2 <= messages, estimatedBytes * 2 <= Double(bytes), now >= notBefore else { return false }
        armed = false
        return true
    }

    /// The fullest partition queue holds `count` messages before the poll loop takes from it: arms
    /// the wake if that is near full, and never wakes (the take may empty it at once).
    mutating func seen(_ count: Int) {
        if isNearFull(count) { armed = true }
    }

    /// Near full: librdkafka compares when a fetch answer is handled, and an answer can take the
    /// queue past the mark, so the fetchers may have stopped.
    private func isNearFull(_ count: Int) -> Bool {
        count * 10 >= messages * 9 || Double(count) * meanMessageBytes * 10 >= Double(bytes) * 9
    }

    /// Partitions were paused or resumed. librdkafka drops a paused partition's messages from its
    /// queue only as they are taken, so a queue the fetchers stopped at can empty without being
    /// seen full; and a resumed partition's first fetch answer can fill it at once.
    mutating func pausesChanged() {
        armed = true
    }

    /// The wake asked for at `now` did not reach every leader.
    mutating func failed(now: Duration) {
        armed = true
        notBefore = now + backoffAfterFailure
    }
}
