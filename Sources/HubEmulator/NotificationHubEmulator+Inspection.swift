import Foundation
import TextFormats

extension NotificationHubEmulator {
    /// `/_emulator/deliveries`, `/_emulator/stats`, `/_emulator/faults`: no authorization (loopback tooling).
    func inspect(_ request: EmulatorRequest, _ parts: [String]) -> EmulatorResponse {
        switch (request.method, parts.dropFirst().first) {
        case ("GET", "deliveries"):
            return .json(200, log.deliveriesJSON(afterID: Int(request.queryValue("after") ?? "") ?? 0))
        case ("DELETE", "deliveries"):
            log.clear()
            return EmulatorResponse(status: 204)
        case ("GET", "stats"):
            let scheduled = scheduler.snapshot
            return .json(
                200,
                log.statsJSON(
                    registrations: registrationCount,
                    scheduled: scheduled.pending.count,
                    cancelled: scheduled.cancelled
                )
            )
        case ("GET", "scheduled"):
            var w = JSONWriter()
            w.beginObject()
            w.key("scheduled")
            w.beginArray()
            for (id, entry) in scheduler.snapshot.pending {
                w.beginObject()
                w.member("id", id)
                w.member("hub", entry.hub)
                w.member("format", entry.format)
                w.member("tagExpression", entry.tagExpression)
                w.member("at", CivilDate.rfc3339(epochSeconds: entry.at, milliseconds: true))
                w.endObject()
            }
            w.endArray()
            w.endObject()
            return .json(200, w.bytes)
        case ("POST", "faults"):
            let decoder = JSONDecoder()
            let body = Data(request.body)
            guard
                let added = (try? decoder.decode([Fault].self, from: body))
                    ?? (try? decoder.decode(Fault.self, from: body)).map({ [$0] })
            else {
                return .error(400, "A fault is a JSON object such as {\"status\":429,\"rate\":0.3,\"retryAfter\":1}")
            }
            for fault in added { faults.add(fault) }
            return .json(200, Self.encode(faults.active))
        case ("GET", "faults"):
            return .json(200, Self.encode(faults.active))
        case ("DELETE", "faults"):
            faults.clear()
            return EmulatorResponse(status: 204)
        default:
            return .error(404, "No such emulator endpoint: \(request.method) \(request.path)")
        }
    }
}
