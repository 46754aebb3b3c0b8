import Foundation
import News
import NotificationHubs
import TextFormats

extension NotificationHubEmulator {
    /// NH's request limit.
    static let maxBody = 64 * 1024

    /// A send the emulator took: checked, with everything its delivery needs.
    struct AcceptedSend: Sendable {
        let hub: String
        let store: HubStore
        let format: String
        let tagHeader: String?
        let expression: TagExpression?
        /// Lower-case names: templates match property names case-insensitively.
        let properties: [String: String]
        let body: [UInt8]
        let direct: Bool
        let platformHeaders: [(String, String)]
        let problem: LintViolation?
        /// An injected delay before the answer.
        let latencyMs: Int
    }

    /// `POST /{hub}/messages`: route by tag expression, render templates, answer 201. A native
    /// send reaches that platform's registrations only and is linted by the sender's rules
    /// (`NativeLint`): what the hub itself checks (valid JSON or XML, an `X-WNS-Type` that is the
    /// XML's root) is refused with 400, what only the platform would drop (over its size, the
    /// retired GCM shape, an alert without one) is accepted and flagged in the delivery log.
    func send(_ request: EmulatorRequest, hub: String, store: HubStore) -> EmulatorResponse {
        let accepted: AcceptedSend
        switch accept(request, hub: hub, store: store) {
        case .success(let send): accepted = send
        case .failure(let refusal): return refusal.response
        }
        let id = deliver(accepted, scheduledID: nil)
        var response = EmulatorResponse(
            status: 201,
            headers: [
                ("Location", "http://\(request.host)/\(hub)/messages/\(id)?api-version=2020-06"),
                ("TrackingId", "emulator-\(id)"),
            ]
        )
        if request.queryValue("test") != nil {
            response.headers.append(("Content-Type", "application/xml; charset=utf-8"))
            response.body = Array(
                "<NotificationOutcome><Success>\(min(log.record(notificationID: id)?.matched ?? 0, 10))</Success><Failure>0</Failure><Results/></NotificationOutcome>"
                    .utf8
            )
        }
        response.latencyMs = accepted.latencyMs
        return response
    }

    /// A refused send's answer (an error, an injected fault, or a dropped connection).
    struct Refusal: Error {
        let response: EmulatorResponse
    }

    /// Checks a send as the hub does and lets the injected faults have their say.
    private func accept(_ request: EmulatorRequest, hub: String, store: HubStore) -> Result<AcceptedSend, Refusal> {
        func refuse(_ status: Int, _ detail: String) -> Result<AcceptedSend, Refusal> {
            .failure(Refusal(response: reject(status, detail)))
        }
        guard request.body.count <= Self.maxBody else { return refuse(413, "The request body exceeds 64 KB") }
        guard let format = request.header("servicebusnotification-format")?.lowercased(), !format.isEmpty else {
            return refuse(400, "The ServiceBusNotification-Format header is missing")
        }
        guard request.header("content-type")?.lowercased().hasPrefix("application/json") == true || format != "template"
        else {
            return refuse(400, "A template notification needs Content-Type application/json")
        }
        var expression: TagExpression?
        let tagHeader = request.header("servicebusnotification-tags")
        if let tagHeader {
            do {
                expression = try TagExpression(parsing: tagHeader)
            } catch {
                return refuse(400, "Invalid ServiceBusNotification-Tags: \(error.description)")
            }
        }
        var problem: LintViolation?
        var platformHeaders: [(String, String)] = []
        if let platform = NativePlatform(rawValue: format) {
            if let violation = NativeLint.check(platform, payload: request.body, header: request.header) {
                switch violation.rule {
                case .json, .xml, .wnsType: return refuse(400, violation.description)
                default: problem = violation
                }
            }
            platformHeaders = request.headers.filter {
                $0.key == "content-type" || $0.key.hasPrefix("apns-") || $0.key.hasPrefix("x-wns-")
            }.sorted { $0.key < $1.key }
        }
        var properties: [String: String] = [:]
        if format == "template" {
            guard case .object(let object)? = try? JSONParser.parse(request.body) else {
                return refuse(400, "A template notification's body must be a JSON object of strings")
            }
            properties.reserveCapacity(object.count)
            for (name, value) in object {
                guard case .string(let s) = value else {
                    return refuse(400, "Template property \(name) is not a string")
                }
                properties[name.lowercased()] = s
            }
        }
        let decision = faults.decide(tags: expression?.tags ?? [])
        if decision.drop {
            var dropped = EmulatorResponse(status: 0)
            dropped.drop = true
            return .failure(Refusal(response: dropped))
        }
        if let answer = decision.answer {
            var response = reject(answer.status, answer.detail, retryAfter: answer.retryAfter)
            response.latencyMs = decision.latencyMs
            return .failure(Refusal(response: response))
        }
        return .success(
            AcceptedSend(
                hub: hub,
                store: store,
                format: format,
                tagHeader: tagHeader,
                expression: expression,
                properties: properties,
                body: request.body,
                direct: request.queryValue("direct") != nil,
                platformHeaders: platformHeaders,
                problem: problem,
                latencyMs: decision.latencyMs
            )
        )
    }

    /// Routes an accepted send to the devices it reaches now and records it; its notification id.
    func deliver(_ send: AcceptedSend, scheduledID: String?) -> Int {
        let match: HubStore.Match =
            send.direct
            ? HubStore.Match(count: 1, sample: [])
            : send.store.match(
                format: send.format,
                expression: send.expression,
                sampleSize: configuration.samplePayloads
            )
        let payloads: [[UInt8]] =
            send.direct
            ? [send.body]
            : match.sample.map { $0.template?.render(send.properties) ?? send.body }
        let id = log.newNotificationID()
        log.recordSend(
            .init(
                notificationID: id,
                hub: send.hub,
                tagExpression: send.tagHeader,
                format: send.format,
                matched: match.count,
                payloads: payloads,
                devices: match.sample.map(\.device),
                atEpochSeconds: clock(),
                headers: send.platformHeaders,
                problem: send.problem?.description,
                outcome: send.problem.map {
                    $0.rule == .size ? "PnsInvalidNotificationSize" : "PnsInvalidNotificationFormat"
                } ?? "Success",
                scheduledID: scheduledID
            )
        )
        return id
    }

    /// `POST /{hub}/schedulednotifications`: checked as a send now, delivered at its
    /// `ServiceBusNotification-ScheduleTime` (UTC, with or without a zone and fractions; at most 7
    /// days ahead, not in the past) to the devices it reaches then.
    func schedule(_ request: EmulatorRequest, hub: String, store: HubStore) -> EmulatorResponse {
        guard let text = request.header("servicebusnotification-scheduletime") else {
            return reject(400, "The ServiceBusNotification-ScheduleTime header is missing")
        }
        // The .NET SDK writes no zone: the time is UTC.
        let zoned =
            text.hasSuffix("Z") || text.hasSuffix("z") || text.dropFirst(19).contains(where: { $0 == "+" || $0 == "-" })
        guard let time = Timestamp(rfc3339: zoned ? text : text + "Z") else {
            return reject(
                400,
                "The ServiceBusNotification-ScheduleTime header is not a UTC date-time: \(text.prefix(40))"
            )
        }
        let now = clock()
        guard time.epochSeconds > now else { return reject(400, "The schedule time \(text.prefix(40)) is in the past") }
        guard time.epochSeconds - now <= 7 * 86_400 else {
            return reject(400, "The schedule time \(text.prefix(40)) is more than 7 days ahead")
        }
        let accepted: AcceptedSend
        switch accept(request, hub: hub, store: store) {
        case .success(let send): accepted = send
        case .failure(let refusal): return refusal.response
        }
        let id = scheduler.add(accepted, at: time.epochSeconds, now: now) { [weak self] send, id in
            _ = self?.deliver(send, scheduledID: id)
        }
        var response = EmulatorResponse(
            status: 201,
            headers: [
                ("Location", "http://\(request.host)/\(hub)/schedulednotifications/\(id)?api-version=2020-06"),
                ("TrackingId", "emulator-\(id)"),
            ]
        )
        response.latencyMs = accepted.latencyMs
        return response
    }

    /// `DELETE /{hub}/schedulednotifications/{id}`: 200, or 404 for an id it does not hold.
    func cancelScheduled(id: String, hub: String) -> EmulatorResponse {
        scheduler.cancel(id: id, hub: hub)
            ? EmulatorResponse(status: 200) : .error(404, "No scheduled notification \(id.prefix(80))")
    }

    /// `GET /{hub}/messages/{id}`: per-message telemetry. The emulator finishes a send as it
    /// accepts it, so a send it remembers is `Completed` (or `NoTargetFound`); it does not know a
    /// template device's platform, so the devices reached are counted under the send's format
    /// (`TemplateOutcomeCounts` for a template send), as `Success`, or for a flagged native send
    /// as the platform's refusal (`PnsInvalidNotificationSize`, `PnsInvalidNotificationFormat`).
    func notificationDetails(id: String, hub: String, host: String) -> EmulatorResponse {
        guard let number = Int(id), let record = log.record(notificationID: number), record.hub == hub else {
            return .error(404, "No telemetry for notification \(id)")
        }
        let time = CivilDate.rfc3339(epochSeconds: record.atEpochSeconds)
        let outcomes =
            switch record.format {
            case "apple": "ApnsOutcomeCounts"
            case "fcmv1": "FcmV1OutcomeCounts"
            case "windows": "WnsOutcomeCounts"
            default: "TemplateOutcomeCounts"
            }
        let body = """
            <NotificationDetails xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" \
            xmlns:i="http://www.w3.org/2001/XMLSchema-instance"><NotificationId>\(id)</NotificationId>\
            <Location>sb://\(XMLText.escape(host))/\(XMLText.escape(hub))/messages/\(id)</Location>\
            <State>\(record.matched > 0 ? "Completed" : "NoTargetFound")</State><EnqueueTime>\(time)</EnqueueTime>\
            <StartTime>\(time)</StartTime><EndTime>\(time)</EndTime><TargetPlatforms>\(XMLText.escape(record.format))</TargetPlatforms>\
            <\(outcomes)><Outcome><Name>\(record.outcome)</Name><Count>\(record.matched)</Count></Outcome></\(outcomes)>\
            </NotificationDetails>
            """
        return EmulatorResponse(
            status: 200,
            headers: [("Content-Type", "application/xml; charset=utf-8")],
            body: Array(body.utf8)
        )
    }

    private func reject(_ status: Int, _ detail: String, retryAfter: Int? = nil) -> EmulatorResponse {
        log.recordStatus(status)
        return .error(status, detail, retryAfter: retryAfter)
    }
}
