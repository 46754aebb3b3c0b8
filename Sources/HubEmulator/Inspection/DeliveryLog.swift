import Metrics
import News
import NotificationHubs
import Synchronization
import TextFormats

/// What the emulator did with each notification, for `/_emulator/deliveries` and `/_emulator/stats`.
public final class DeliveryLog: Sendable {
    /// One accepted notification.
    public struct Record: Sendable {
        public let notificationID: Int
        public let hub: String
        public let tagExpression: String?
        public let format: String
        public let matched: Int
        /// Rendered payloads of the first few matching devices…
        public let payloads: [[UInt8]]
        /// …and those devices: `registration:<id>` or `installation:<id>`.
        public let devices: [String]
        public let atEpochSeconds: Double
        /// A native send's `Content-Type` and platform headers (`apns-*`, `x-wns-*`), lower-case, by name.
        public var headers: [(String, String)] = []
        /// The platform rule a native send breaks: the hub accepts it, its platform would drop it.
        public var problem: String?
        /// What the per-message telemetry says of the devices reached (NH's outcome names).
        public var outcome = "Success"
        /// The scheduled notification it was, if it was one.
        public var scheduledID: String?
    }

    private struct State {
        var records: [Record] = []
        var dropped = 0
        var sends = 0
        var flagged = 0
        var devicesReached = 0
        var statusCounts: [Int: Int] = [:]
        var deliveriesByExpression: [String: Int] = [:]
        /// One counter per status answered, made when the status is first seen.
        var answered: [Int: Counter] = [:]
    }

    private let state = Mutex(State())
    private let nextID = Atomic<Int>(1)
    /// The same counts through swift-metrics, for `hubcast emulator --http-port`'s /metrics.
    private let devicesReached = Counter(label: "hubcast_emulator_devices_reached")
    let capacity: Int

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var records: [Record] { state.withLock { $0.records } }

    /// The record of one send, while the log still holds it (ids grow with time: search from the newest).
    func record(notificationID: Int) -> Record? {
        state.withLock { s in s.records.last { $0.notificationID == notificationID } }
    }

    func newNotificationID() -> Int { nextID.add(1, ordering: .relaxed).oldValue }

    func recordSend(_ record: Record) {
        devicesReached.increment(by: record.matched)
        state.withLock { s in
            s.sends += 1
            if record.problem != nil { s.flagged += 1 }
            s.devicesReached += record.matched
            s.statusCounts[201, default: 0] += 1
            Self.answered(201, in: &s).increment()
            s.deliveriesByExpression[record.tagExpression ?? "(broadcast)", default: 0] += record.matched
            if s.records.count >= capacity {
                // Oldest out: the log is for inspection, bounded so a long benchmark cannot exhaust memory.
                s.records.removeFirst(s.records.count / 10 + 1)
                s.dropped += 1
            }
            s.records.append(record)
        }
    }

    /// Counts a non-201 answer to a send.
    func recordStatus(_ status: Int) {
        state.withLock { s in
            s.statusCounts[status, default: 0] += 1
            Self.answered(status, in: &s).increment()
        }
    }

    private static func answered(_ status: Int, in s: inout State) -> Counter {
        if let counter = s.answered[status] { return counter }
        let counter = Counter(label: "hubcast_emulator_sends", dimensions: [("status", String(status))])
        s.answered[status] = counter
        return counter
    }

    func clear() {
        // The counters go on: Prometheus counters only ever grow.
        state.withLock { $0 = State(answered: $0.answered) }
    }

    /// `{"count":N,"deliveries":[…]}` for the records after `afterID`.
    func deliveriesJSON(afterID: Int = 0) -> [UInt8] {
        let records = state.withLock { $0.records }.filter { $0.notificationID > afterID }
        var w = JSONWriter(reservingCapacity: 128 * records.count + 64)
        w.beginObject()
        w.key("count")
        w.number(Int64(records.count))
        w.key("deliveries")
        w.beginArray()
        for r in records {
            w.beginObject()
            w.key("notificationId")
            w.string(String(r.notificationID))
            w.member("hub", r.hub)
            w.member("tagExpression", r.tagExpression)
            w.member("format", r.format)
            w.key("matched")
            w.number(Int64(r.matched))
            w.key("payloads")
            w.beginArray()
            for p in r.payloads { w.string(String(decoding: p, as: UTF8.self)) }
            w.endArray()
            w.key("devices")
            w.beginArray()
            for d in r.devices { w.string(d) }
            w.endArray()
            w.key("at")
            w.raw(String(r.atEpochSeconds).utf8)
            if !r.headers.isEmpty {
                w.key("headers")
                w.beginObject()
                for (name, value) in r.headers { w.member(name, value) }
                w.endObject()
            }
            w.member("problem", r.problem)
            w.member("scheduledId", r.scheduledID)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }

    func statsJSON(registrations: Int, scheduled: Int, cancelled: Int) -> [UInt8] {
        let s = state.withLock { $0 }
        var w = JSONWriter()
        w.beginObject()
        w.key("scheduledPending")
        w.number(Int64(scheduled))
        w.key("scheduledCancelled")
        w.number(Int64(cancelled))
        w.key("sends")
        w.number(Int64(s.sends))
        w.key("flagged")
        w.number(Int64(s.flagged))
        w.key("devicesReached")
        w.number(Int64(s.devicesReached))
        w.key("registrations")
        w.number(Int64(registrations))
        w.key("statusCounts")
        w.beginObject()
        for (status, count) in s.statusCounts.sorted(by: { $0.key < $1.key }) {
            w.key(String(status))
            w.number(Int64(count))
        }
        w.endObject()
        w.key("deliveriesPerTag")
        w.beginObject()
        for (expression, count) in s.deliveriesByExpression.sorted(by: { $0.key < $1.key }) {
            w.key(expression)
            w.number(Int64(count))
        }
        w.endObject()
        w.endObject()
        return w.bytes
    }
}

extension NotificationHubEmulator {
    /// One accepted notification, for in-process callers (the demo).
    public struct Delivery: Sendable {
        public let tagExpression: String?
        public let matched: Int
    }

    /// The deliveries recorded so far.
    public func deliveries() -> [Delivery] {
        log.records.map { Delivery(tagExpression: $0.tagExpression, matched: $0.matched) }
    }
}
