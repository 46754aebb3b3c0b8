import Foundation
import News
import NotificationHubs
import TextFormats

extension NotificationHubEmulator {
    /// NH's request limit.
    static let maxBody = 64 * 1024

    /// `POST /{hub}/messages`: route by tag expression, render templates, answer 201. A native
    /// send reaches that platform's registrations only and is linted by the sender's rules
    /// (`NativeLint`): what the hub itself checks (valid JSON or XML, an `X-WNS-Type` that is the
    /// XML's root) is refused with 400, what only the platform would drop (over its size, the
    /// retired GCM shape, an alert without one) is accepted and flagged in the delivery log.
    func send(_ request: EmulatorRequest, hub: String, store: HubStore) -> EmulatorResponse {
        guard request.body.count <= Self.maxBody else { return reject(413, "The request body exceeds 64 KB") }
        guard let format = request.header("servicebusnotification-format")?.lowercased(), !format.isEmpty else {
            return reject(400, "The ServiceBusNotification-Format header is missing")
        }
        guard request.header("content-type")?.lowercased().hasPrefix("application/json") == true || format != "template"
        else {
            return reject(400, "A template notification needs Content-Type application/json")
        }
        var expression: TagExpression?
        let tagHeader = request.header("servicebusnotification-tags")
        if let tagHeader {
            do {
                expression = try TagExpression(parsing: tagHeader)
            } catch {
                return reject(400, "Invalid ServiceBusNotification-Tags: \(error.description)")
            }
        }
        var problem: LintViolation?
        var platformHeaders: [(String, String)] = []
        if let platform = NativePlatform(rawValue: format) {
            if let violation = NativeLint.check(platform, payload: request.body, header: request.header) {
                switch violation.rule {
                case .json, .xml, .wnsType: return reject(400, violation.description)
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
                return reject(400, "A template notification's body must be a JSON object of strings")
            }
            properties.reserveCapacity(object.count)
            for (name, value) in object {
                guard case .string(let s) = value else {
                    return reject(400, "Template property \(name) is not a string")
                }
                // Lowercased once here: templates match property names case-insensitively.
                properties[name.lowercased()] = s
            }
        }
        let decision = faults.decide(tags: expression?.tags ?? [])
        if decision.drop {
            var dropped = EmulatorResponse(status: 0)
            dropped.drop = true
            return dropped
        }
        if let answer = decision.answer {
            var response = reject(answer.status, answer.detail, retryAfter: answer.retryAfter)
            response.latencyMs = decision.latencyMs
            return response
        }
        let direct = request.queryValue("direct") != nil
        let match: HubStore.Match =
            direct
            ? HubStore.Match(count: 1, sample: [])
            : store.match(format: format, expression: expression, sampleSize: configuration.samplePayloads)
        let payloads: [[UInt8]] =
            direct
            ? [request.body]
            : match.sample.map { $0.template?.render(properties) ?? request.body }
        let id = log.newNotificationID()
        log.recordSend(
            .init(
                notificationID: id,
                hub: hub,
                tagExpression: tagHeader,
                format: format,
                matched: match.count,
                payloads: payloads,
                devices: match.sample.map(\.device),
                atEpochSeconds: Date().timeIntervalSince1970,
                headers: platformHeaders,
                problem: problem?.description,
                outcome: problem.map {
                    $0.rule == .size ? "PnsInvalidNotificationSize" : "PnsInvalidNotificationFormat"
                }
                    ?? "Success"
            )
        )
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
                "<NotificationOutcome><Success>\(min(match.count, 10))</Success><Failure>0</Failure><Results/></NotificationOutcome>"
                    .utf8
            )
        }
        response.latencyMs = decision.latencyMs
        return response
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
