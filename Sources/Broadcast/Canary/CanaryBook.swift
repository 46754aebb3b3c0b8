import NotificationHubs

/// The canaries one instance is answerable for, as a value: events in (requested, taken from
/// Kafka, accepted by the hub, its telemetry, a deadline passing), actions out. Times are
/// milliseconds since the epoch, given by the caller.
struct CanaryBook {
    enum Action: Equatable {
        /// Report it: metrics, a stdout line, a result record on the canary topic.
        case finish(CanaryResult)
        /// Ask the hub for the notification's telemetry once `atMs` has come.
        case verify(id: String, notificationID: String, atMs: Int64)
    }

    enum Phase: Equatable {
        /// Waiting to be sent (in the pipeline, held for the hub, throttled).
        case waiting
        /// Accepted; its telemetry is not final yet.
        case verifying(notificationID: String, endToEndMs: Int64)
    }

    struct Entry {
        var request: CanaryRequest
        /// This instance's pipeline took it from Kafka: its outcome is this instance's to report.
        var taken: Bool
        var phase: Phase = .waiting
        /// Why its last attempt failed, while it is held or retried: the reason if its deadline passes.
        var lastFailure: String?
    }

    /// What `taken` makes of a request.
    enum Taken: Equatable {
        case send
        /// Reported now (in the actions): its deadline has passed.
        case late
        /// Nothing to do, nothing to report: already reported, not this group's, long gone, not
        /// plausible, or too many outstanding.
        case ignored
    }

    /// The furthest deadline a request may set: whoever can write to the topic cannot make this
    /// instance keep a canary for longer.
    static let longestDeadlineMs: Int64 = 3_600_000
    /// A request whose deadline passed longer ago than this is history (a new group reading the
    /// topic from its start), not a canary that failed now.
    static let historyAfterMs: Int64 = 60_000
    /// Canaries outstanding at most: more are not sent (a flood on the topic must not take the
    /// hub's quota from the news).
    static let mostOutstanding = 16
    /// How long telemetry is asked again while it is not final.
    static let verifyEveryMs: Int64 = 500
    private static let reportedKept = 256

    let instance: String
    /// The consumer group this instance belongs to: requests for another group are not its own.
    let group: String
    private(set) var entries: [String: Entry] = [:]
    /// Ids reported lately: a request taken after it was reported (a consumer that caught up) is
    /// not reported twice.
    private var reported: [String] = []
    /// Why the hub is held as unavailable, while the pipeline holds it so: the reason of a canary
    /// that could not go meanwhile.
    private(set) var hubDown: String?
    /// The reason of the last send the hub failed, promoted to `hubDown` when the pipeline holds the hub.
    private var lastHubFailure: String?
    /// Set once the hub refuses telemetry for the tier (403): not asked again.
    private(set) var telemetryRefused: String?
    /// After a graceful shutdown began: no new requests, and those of its own not taken are the next holder's.
    private(set) var stopping = false

    init(instance: String, group: String = "hubcast") {
        self.instance = instance
        self.group = group
    }

    static func deadlineMs(of request: CanaryRequest, nowMs: Int64) -> Int64 {
        min(request.deadlineMs, nowMs + longestDeadlineMs)
    }

    // MARK: Events

    /// This instance wrote a request to the topic.
    mutating func requested(_ request: CanaryRequest) {
        if entries[request.id] == nil { entries[request.id] = Entry(request: request, taken: false) }
    }

    /// The pipeline took a request from Kafka.
    mutating func taken(_ request: CanaryRequest, nowMs: Int64) -> (Taken, [Action]) {
        guard !reported.contains(request.id), request.group == nil || request.group == group,
            request.isPlausible(nowMs: nowMs), nowMs - request.deadlineMs < Self.historyAfterMs
        else { return (.ignored, []) }
        var entry = entries[request.id] ?? Entry(request: request, taken: true)
        guard entry.phase == .waiting, entries[request.id] != nil || entries.count < Self.mostOutstanding else {
            return (.ignored, [])
        }
        entry.request.deadlineMs = Self.deadlineMs(of: request, nowMs: nowMs)
        entry.taken = true
        entries[request.id] = entry
        guard nowMs < entry.request.deadlineMs else {
            return (.late, finish(request.id, .failed, reason: hubDown ?? "stale", nowMs: nowMs))
        }
        return (.send, [])
    }

    /// The hub accepted it; `notificationID` from its `Location` (a Standard hub gives one).
    mutating func accepted(id: String, notificationID: String?, nowMs: Int64) -> [Action] {
        guard let entry = entries[id], entry.phase == .waiting else { return [] }
        // Requests are plausible (within a day of now), so this cannot overflow; clamped all the same.
        let endToEnd = max(0, nowMs.subtractingReportingOverflow(entry.request.requestedAtMs).partialValue)
        guard let notificationID else {
            return finish(
                id,
                .accepted,
                reason: "the hub gave no notification id: telemetry needs a Standard tier hub",
                endToEndMs: endToEnd,
                nowMs: nowMs
            )
        }
        if let telemetryRefused {
            return finish(
                id,
                .accepted,
                reason: telemetryRefused,
                endToEndMs: endToEnd,
                notificationID: notificationID,
                nowMs: nowMs
            )
        }
        entries[id]?.phase = .verifying(notificationID: notificationID, endToEndMs: endToEnd)
        return [.verify(id: id, notificationID: notificationID, atMs: nowMs + Self.verifyEveryMs)]
    }

    /// An attempt failed. `final`: it will not be sent again; otherwise it is held or retried, and
    /// the reason is kept for its deadline. A send found past its deadline gets the reason the
    /// deadline would give, whichever of the sender and the clock sees it first.
    mutating func failed(id: String, reason: String, final: Bool, nowMs: Int64) -> [Action] {
        guard let entry = entries[id], entry.phase == .waiting else { return [] }
        guard final else {
            entries[id]?.lastFailure = reason
            return []
        }
        return finish(
            id,
            .failed,
            reason: reason == FailureReason.stale.name ? missedReason(entry) : reason,
            nowMs: nowMs
        )
    }

    /// A send the hub failed (any send, not only a canary's).
    mutating func hubFailed(reason: String) {
        lastHubFailure = reason
    }

    /// The pipeline holds the hub as unavailable.
    mutating func hubUnavailable() {
        hubDown = lastHubFailure ?? "hub-unavailable"
    }

    mutating func hubAvailable() {
        hubDown = nil
        lastHubFailure = nil
    }

    /// The hub's telemetry for it.
    mutating func details(id: String, _ details: NotificationDetails, nowMs: Int64) -> [Action] {
        guard let entry = entries[id], case .verifying(let notificationID, let endToEnd) = entry.phase else {
            return []
        }
        guard details.isFinal else {
            return notFinalYet(entry, "its telemetry still says \(details.state) at the deadline", nowMs: nowMs)
        }
        let failure: String?
        switch details.state {
        case "Completed", "DetailedStateAvailable": failure = details.successes > 0 ? nil : "no-device"
        case "NoTargetFound": failure = "no-target"
        case "Abandoned": failure = "abandoned"
        case "Canceled", "Cancelled": failure = "cancelled"
        default: failure = "unexpected-state"
        }
        guard let failure else {
            return finish(
                id,
                .verified,
                endToEndMs: endToEnd,
                devices: details.successes,
                notificationID: notificationID,
                nowMs: nowMs
            )
        }
        return finish(id, .failed, reason: failure, endToEndMs: endToEnd, notificationID: notificationID, nowMs: nowMs)
    }

    /// The hub gave no telemetry: 404 (none yet) and 401 (the key refused for now, as for the
    /// sends in an outage) are asked again until the deadline; 403 (not on this tier) is never
    /// asked again; anything else is reported as accepted, with why.
    mutating func detailsUnavailable(id: String, status: Int?, message: String, nowMs: Int64) -> [Action] {
        guard let entry = entries[id], case .verifying(let notificationID, let endToEnd) = entry.phase else {
            return []
        }
        switch status {
        case 404:
            return notFinalYet(entry, "the hub had no telemetry for it by the deadline", nowMs: nowMs)
        case 401:
            return notFinalYet(entry, "the hub refused the key for its telemetry (HTTP 401)", nowMs: nowMs)
        case 403:
            let reason = "the hub refused its telemetry (HTTP 403): per-message telemetry needs a Standard tier hub"
            telemetryRefused = reason
            return finish(
                id,
                .accepted,
                reason: reason,
                endToEndMs: endToEnd,
                notificationID: notificationID,
                nowMs: nowMs
            )
        default:
            return finish(
                id,
                .accepted,
                reason: "its telemetry could not be read: \(message)",
                endToEndMs: endToEnd,
                notificationID: notificationID,
                nowMs: nowMs
            )
        }
    }

    /// Its telemetry will not be asked for (the instance is stopping): what is known is reported.
    mutating func stopVerifying(id: String, nowMs: Int64) -> [Action] {
        guard let entry = entries[id], case .verifying(let notificationID, let endToEnd) = entry.phase else {
            return []
        }
        return finish(
            id,
            .accepted,
            reason: "the instance stopped before its telemetry was final",
            endToEndMs: endToEnd,
            notificationID: notificationID,
            nowMs: nowMs
        )
    }

    /// A graceful shutdown began.
    mutating func stop() {
        stopping = true
    }

    /// Deadlines. `owning`: this instance holds the canary topic's first partition. A request it
    /// wrote but did not take is another instance's to report once the partition moved (or while
    /// this one stops); while it holds the partition, a request it never took means its consumer
    /// is stuck.
    mutating func tick(nowMs: Int64, owning: Bool) -> [Action] {
        var actions: [Action] = []
        for (id, entry) in entries where nowMs >= entry.request.deadlineMs {
            switch entry.phase {
            case .waiting where !entry.taken && (!owning || stopping):
                entries[id] = nil
            case .waiting:
                actions += finish(id, .failed, reason: missedReason(entry), nowMs: nowMs)
            case .verifying(let notificationID, let endToEnd):
                actions += finish(
                    id,
                    .accepted,
                    reason: "its telemetry was not final by the deadline",
                    endToEndMs: endToEnd,
                    notificationID: notificationID,
                    nowMs: nowMs
                )
            }
        }
        return actions.sorted { $0.sortKey < $1.sortKey }
    }

    // MARK: Helpers

    /// Why a canary still waiting at its deadline did not go: its own last failure, else the
    /// hub's while the pipeline holds it, else where it was stuck.
    private func missedReason(_ entry: Entry) -> String {
        entry.lastFailure ?? hubDown ?? (entry.taken ? "undelivered" : "not-consumed")
    }

    private mutating func notFinalYet(_ entry: Entry, _ reason: String, nowMs: Int64) -> [Action] {
        guard case .verifying(let notificationID, let endToEnd) = entry.phase else { return [] }
        let next = nowMs + Self.verifyEveryMs
        guard next < entry.request.deadlineMs else {
            return finish(
                entry.request.id,
                .accepted,
                reason: reason,
                endToEndMs: endToEnd,
                notificationID: notificationID,
                nowMs: nowMs
            )
        }
        return [.verify(id: entry.request.id, notificationID: notificationID, atMs: next)]
    }

    private mutating func finish(
        _ id: String,
        _ outcome: CanaryResult.Outcome,
        reason: String? = nil,
        endToEndMs: Int64? = nil,
        devices: Int? = nil,
        notificationID: String? = nil,
        nowMs: Int64
    ) -> [Action] {
        entries[id] = nil
        if reported.count >= Self.reportedKept { reported.removeFirst(Self.reportedKept / 2) }
        reported.append(id)
        return [
            .finish(
                CanaryResult(
                    id: id,
                    outcome: outcome,
                    reason: reason,
                    endToEndMs: endToEndMs,
                    devices: devices,
                    notificationId: notificationID,
                    by: instance,
                    atMs: nowMs
                )
            )
        ]
    }
}

private extension CanaryBook.Action {
    var sortKey: String {
        switch self {
        case .finish(let result): result.id
        case .verify(let id, _, _): id
        }
    }
}
