import Foundation
import News
import NotificationHubs

extension NotificationHubEmulator {
    static let maxTagsPerDevice = 60

    /// `PUT/GET/DELETE /{hub}/registrations/{id}`.
    func registration(_ request: EmulatorRequest, id: String, hub: String, store: HubStore) -> EmulatorResponse {
        switch request.method {
        case "PUT":
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
            return atom(200, store.registration(id: id))
        case "GET":
            guard let registration = store.registration(id: id) else { return .error(404, "Registration \(id) was not found") }
            return atom(200, registration)
        case "DELETE":
            return store.deleteRegistration(id: id) ? EmulatorResponse(status: 200) : .error(404, "Registration \(id) was not found")
        default:
            return .error(405, "\(request.method) is not allowed on a registration")
        }
    }

    /// `GET /{hub}/tags/{tag}/registrations`: an Atom feed.
    func registrations(tag: String, store: HubStore) -> EmulatorResponse {
        let entries = store.registrations(tag: tag).map { entry($0) }.joined()
        let feed = #"<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">"# + entries + "</feed>"
        return EmulatorResponse(status: 200, headers: [("Content-Type", "application/atom+xml;type=feed;charset=utf-8")], body: Array(feed.utf8))
    }

    /// `PUT/GET/DELETE/PATCH /{hub}/installations/{id}`.
    func installation(_ request: EmulatorRequest, id: String, store: HubStore) -> EmulatorResponse {
        switch request.method {
        case "PUT":
            guard let installation = try? JSONDecoder().decode(Installation.self, from: Data(request.body)) else {
                return .error(400, "The installation is not valid JSON with installationId, platform and pushChannel")
            }
            guard installation.installationId == id else { return .error(400, "installationId does not match the URL") }
            return save(installation, in: store)
        case "PATCH":
            guard var installation = store.installation(id: id) else { return .error(404, "Installation \(id) was not found") }
            guard let operations = try? JSONDecoder().decode([InstallationPatch].self, from: Data(request.body)) else {
                return .error(400, "The body is not a JSON Patch array")
            }
            for operation in operations {
                if let problem = Self.apply(operation, to: &installation) { return .error(400, problem) }
            }
            return save(installation, in: store)
        case "GET":
            guard let installation = store.installation(id: id) else { return .error(404, "Installation \(id) was not found") }
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
            guard let value = op.value, let template = try? JSONDecoder().decode(Installation.Template.self, from: Data(value.utf8)) else {
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

    static func tagProblem(_ tags: [String]) -> String? {
        if tags.count > maxTagsPerDevice { return "A registration carries at most \(maxTagsPerDevice) tags, got \(tags.count)" }
        if let bad = tags.first(where: { !TagSyntax.isTag($0) }) { return "Invalid tag \"\(bad.prefix(130))\"" }
        return nil
    }

    private func atom(_ status: Int, _ registration: Registration?) -> EmulatorResponse {
        EmulatorResponse(status: status, headers: [("Content-Type", "application/atom+xml;type=entry;charset=utf-8")],
                         body: Array((registration?.atomEntry ?? "").utf8))
    }

    private func entry(_ registration: Registration) -> String {
        registration.atomEntry.replacingOccurrences(of: #"<?xml version="1.0" encoding="utf-8"?>"#, with: "")
    }

    static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(value)) ?? Data())
    }
}
