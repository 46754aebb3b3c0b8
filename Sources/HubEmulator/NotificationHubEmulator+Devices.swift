import Foundation
import News
import NotificationHubs
import TextFormats

extension NotificationHubEmulator {
    static let maxTagsPerDevice = 60

    /// `PUT/GET/DELETE /{hub}/registrations/{id}`; PUT and DELETE honour `If-Match` (an ETag, or `*`).
    func registration(_ request: EmulatorRequest, id: String, hub: String, store: HubStore) -> EmulatorResponse {
        switch request.method {
        case "PUT":
            if let refused = Self.preconditionFailed(request, current: store.etag(id: id)) { return refused }
            return save(request, id: id, hub: hub, in: store)
        case "GET":
            guard let registration = store.registration(id: id) else {
                return .error(404, "Registration \(id) was not found")
            }
            return atom(200, registration, etag: store.etag(id: id) ?? 0, request: request, hub: hub)
        case "DELETE":
            if let refused = Self.preconditionFailed(request, current: store.etag(id: id)) { return refused }
            return store.deleteRegistration(id: id)
                ? EmulatorResponse(status: 200) : .error(404, "Registration \(id) was not found")
        default:
            return .error(405, "\(request.method) is not allowed on a registration")
        }
    }

    /// `POST /{hub}/registrations`: a registration whose id the hub chooses.
    func createRegistration(_ request: EmulatorRequest, id: String, hub: String, store: HubStore) -> EmulatorResponse {
        save(request, id: id, hub: hub, in: store)
    }

    private func save(_ request: EmulatorRequest, id: String, hub: String, in store: HubStore) -> EmulatorResponse {
        let registration: Registration
        do {
            registration = try Registration(atomEntry: String(decoding: request.body, as: UTF8.self))
        } catch {
            return .error(400, "Invalid registration: \(error.description)")
        }
        if let problem = Self.tagProblem(registration.tags) { return .error(400, problem) }
        do {
            try store.upsertRegistration(registration, id: id)
        } catch {
            return .error(400, "Invalid BodyTemplate: \(error.description)")
        }
        return atom(200, store.registration(id: id), etag: store.etag(id: id) ?? 0, request: request, hub: hub)
    }

    /// 412 when `If-Match` names another version than `current`. `*` is any version: a missing
    /// registration is then the 404 it always is (clients, ours included, delete with `If-Match: *`).
    static func preconditionFailed(_ request: EmulatorRequest, current: Int?) -> EmulatorResponse? {
        guard let wanted = request.header("if-match")?.trimmingCharacters(in: .whitespaces), wanted != "*" else {
            return nil
        }
        let version = wanted.replacingOccurrences(of: "W/", with: "").trimmingCharacters(
            in: CharacterSet(charactersIn: "\"")
        )
        return current.map(String.init) == version ? nil : .error(412, "The registration's ETag is not \(wanted)")
    }

    /// `GET /{hub}/registrations/` (every registration, or those of one channel with `$filter`) and
    /// `GET /{hub}/tags/{tag}/registrations`: an Atom feed of at most `$top` entries (100), and an
    /// `X-MS-ContinuationToken` header while more remain, to pass back as `ContinuationToken`.
    func registrations(_ request: EmulatorRequest, tag: String?, hub: String, store: HubStore) -> EmulatorResponse {
        var selected: [(Registration, Int)]
        if let tag {
            selected = store.registrations(tag: tag)
        } else if let filter = request.queryValue("$filter").map(Self.decodedQueryValue) {
            guard let channel = Self.channelFilter(filter) else {
                return .error(
                    400,
                    "Unsupported $filter: use ChannelUri, DeviceToken, GcmRegistrationId or FcmV1RegistrationId eq '<handle>'"
                )
            }
            selected = store.registrations { channel.platforms.contains($0.platform) && channel.matches($0.handle) }
        } else {
            selected = store.registrations { _ in true }
        }
        guard let top = Int(request.queryValue("$top") ?? "100"), top > 0 else {
            return .error(400, "$top must be a positive number")
        }
        if let after = request.queryValue("ContinuationToken").map(Self.decodedQueryValue) {
            selected = Array(selected.drop { ($0.0.id ?? "") <= after })
        }
        let page = selected.prefix(min(top, 100))
        var headers = [("Content-Type", "application/atom+xml;type=feed;charset=utf-8")]
        if page.count < selected.count, let last = page.last?.0.id { headers.append(("X-MS-ContinuationToken", last)) }
        // The feed's own title, id, updated and self link come first, as the service writes them.
        let feedURL = XMLText.escape(
            answerURL(request, hub, tag.map { "tags/\($0)/registrations/" } ?? "registrations/")
        )
        let now = CivilDate.rfc3339(epochSeconds: clock())
        let feed =
            #"<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">"#
            + #"<title type="text">Registrations</title><id>\#(feedURL)</id><updated>\#(now)</updated><link rel="self" href="\#(feedURL)"/>"#
            + page.map { $0.0.atomEntry(answered: answered($0.0, etag: $0.1, request: request, hub: hub, at: now)) }
            .joined() + "</feed>"
        return EmulatorResponse(status: 200, headers: headers, body: Array(feed.utf8))
    }

    /// `<Field> eq '<value>'` of Read All Registrations of a Channel: which platforms it names, and
    /// how a handle matches (device tokens in any case; channel URIs url-encoded or not).
    struct ChannelFilter {
        let platforms: Set<Registration.Platform>
        let value: String

        func matches(_ handle: String) -> Bool {
            // Device tokens are hex, sent in upper case; the others are compared as written.
            if platforms == [.apple] { return handle.caseInsensitiveCompare(value) == .orderedSame }
            return handle == value || handle == (value.removingPercentEncoding ?? value)
        }
    }

    static func channelFilter(_ text: String) -> ChannelFilter? {
        let parts = text.split(separator: " ", maxSplits: 2).map(String.init)
        guard parts.count == 3, parts[1] == "eq", parts[2].count >= 2, parts[2].hasPrefix("'"), parts[2].hasSuffix("'")
        else { return nil }
        let value = String(parts[2].dropFirst().dropLast())
        switch parts[0] {
        case "ChannelUri": return ChannelFilter(platforms: [.windows], value: value)
        case "DeviceToken": return ChannelFilter(platforms: [.apple], value: value)
        case "GcmRegistrationId", "FcmV1RegistrationId": return ChannelFilter(platforms: [.fcmv1], value: value)
        default: return nil
        }
    }

    /// A query value as sent: percent-encoded, `+` for a space.
    static func decodedQueryValue(_ raw: String) -> String {
        raw.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? raw
    }

    /// `PUT/GET/DELETE/PATCH /{hub}/installations/{id}`.
    func installation(_ request: EmulatorRequest, id: String, store: HubStore) -> EmulatorResponse {
        switch request.method {
        case "PUT":
            let installation: Installation
            do {
                installation = try JSONDecoder().decode(Installation.self, from: Data(request.body))
            } catch {
                return .error(
                    400,
                    "The installation is not valid JSON with installationId, platform and pushChannel: \(Self.decodingProblem(error))"
                )
            }
            guard installation.installationId == id else { return .error(400, "installationId does not match the URL") }
            if let problem = Self.platformProblem(installation) { return .error(400, problem) }
            return save(installation, in: store)
        case "PATCH":
            guard var installation = store.installation(id: id) else {
                return .error(404, "Installation \(id) was not found")
            }
            guard let operations = try? JSONDecoder().decode([InstallationPatch].self, from: Data(request.body)) else {
                return .error(400, "The body is not a JSON Patch array")
            }
            for operation in operations {
                if let problem = Self.apply(operation, to: &installation) { return .error(400, problem) }
            }
            return save(installation, in: store)
        case "GET":
            guard let installation = store.installation(id: id) else {
                return .error(404, "Installation \(id) was not found")
            }
            return .json(200, Self.encode(installation))
        case "DELETE":
            _ = store.deleteInstallation(id: id)
            return EmulatorResponse(status: 204)
        default:
            return .error(405, "\(request.method) is not allowed on an installation")
        }
    }

    private func save(_ installation: Installation, in store: HubStore) -> EmulatorResponse {
        let allTags = (installation.tags ?? []) + (installation.templates ?? [:]).values.flatMap { $0.tags ?? [] }
        if let problem = Self.tagProblem(allTags) { return .error(400, problem) }
        do {
            try store.upsertInstallation(installation)
        } catch {
            return .error(400, "Invalid template: \(error.description)")
        }
        return EmulatorResponse(status: 200)
    }

    /// JSON Patch on `/tags`, `/tags/<tag>` and `/templates/<name>` (value: the template as JSON text).
    static func apply(_ op: InstallationPatch, to installation: inout Installation) -> String? {
        let path = op.path.split(separator: "/").map(String.init)
        switch (op.op, path.first, path.count) {
        case (.add, "tags", 1):
            guard let tag = op.value else { return "add /tags needs a value" }
            installation.tags = (installation.tags ?? []).filter { $0 != tag } + [tag]
        case (.replace, "tags", 1):
            installation.tags = op.value.map { $0.split(separator: ",").map(String.init) } ?? []
        case (.remove, "tags", 1):
            installation.tags = []
        case (.remove, "tags", 2):
            installation.tags = installation.tags?.filter { $0 != path[1] }
        case (.add, "templates", 2), (.replace, "templates", 2):
            guard let value = op.value,
                let template = try? JSONDecoder().decode(Installation.Template.self, from: Data(value.utf8))
            else {
                return "\(op.op.rawValue) \(op.path) needs a template value {\"body\":…}"
            }
            installation.templates = (installation.templates ?? [:]).merging([path[1]: template]) { $1 }
        case (.remove, "templates", 2):
            installation.templates?.removeValue(forKey: path[1])
        default:
            return "Unsupported patch operation \(op.op.rawValue) \(op.path)"
        }
        return nil
    }

    /// The platforms the emulator models; the service's others are named when refused.
    static let modelledPlatforms: Set<String> = ["apns", "fcmv1", "gcm", "fcm", "wns", "browser"]
    static let otherServicePlatforms: Set<String> = ["adm", "baidu", "mpns", "xiaomi"]

    static func platformProblem(_ installation: Installation) -> String? {
        let platform = installation.platform.lowercased()
        if otherServicePlatforms.contains(platform) {
            return
                "The platform \"\(installation.platform)\" is one the emulator does not model (it models apns, fcmv1, gcm, wns and browser)"
        }
        guard modelledPlatforms.contains(platform) else {
            return "Unknown platform \"\(installation.platform.prefix(40))\""
        }
        if (platform == "browser") != (installation.browserPushChannel != nil) {
            return platform == "browser"
                ? "A browser installation's pushChannel is an object with endpoint, p256dh and auth"
                : "pushChannel is an object only for the browser platform"
        }
        return nil
    }

    /// Which member of the JSON was wrong, without echoing the body.
    static func decodingProblem(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "unreadable" }
        switch error {
        case .keyNotFound(let key, _): return "\(key.stringValue) is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "not a JSON object" : "\(path) has the wrong type"
        @unknown default: return "unreadable"
        }
    }

    static func tagProblem(_ tags: [String]) -> String? {
        if tags.count > maxTagsPerDevice {
            return "A registration carries at most \(maxTagsPerDevice) tags, got \(tags.count)"
        }
        if let bad = tags.first(where: { !TagSyntax.isTag($0) }) { return "Invalid tag \"\(bad.prefix(130))\"" }
        return nil
    }

    private func atom(
        _ status: Int,
        _ registration: Registration?,
        etag: Int,
        request: EmulatorRequest,
        hub: String
    ) -> EmulatorResponse {
        let now = CivilDate.rfc3339(epochSeconds: clock())
        let body = registration.map {
            #"<?xml version="1.0" encoding="utf-8"?>"#
                + $0.atomEntry(answered: answered($0, etag: etag, request: request, hub: hub, at: now))
        }
        return EmulatorResponse(
            status: status,
            headers: [("Content-Type", "application/atom+xml;type=entry;charset=utf-8"), ("ETag", "W/\"\(etag)\"")],
            body: Array((body ?? "").utf8)
        )
    }

    /// What the service writes around a registration: its URL (Atom `id` and `self` link), version and time.
    private func answered(
        _ registration: Registration,
        etag: Int,
        request: EmulatorRequest,
        hub: String,
        at time: String
    ) -> Registration.Answered {
        Registration.Answered(
            etag: etag,
            url: answerURL(request, hub, "registrations/\(registration.id ?? "")"),
            updated: time
        )
    }

    /// A URL of the hub's as the service writes it into an answer (an Atom `id` or `self` link).
    private func answerURL(_ request: EmulatorRequest, _ hub: String, _ path: String) -> String {
        "http://\(request.host)/\(hub)/\(path)?api-version=2015-01"
    }

    static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(value)) ?? Data())
    }
}
