import Hummingbird
import News
import NotificationHubs
import TextFormats

/// Seed 003's registration calls: `POST /api/register?handle=`, `PUT` and `DELETE /api/register/{id}`.
extension BackendAPI {
    /// A new registration id (a JSON string). The caller's own stale registrations of this handle go first.
    func createRegistrationID(caller: Principal, handle: String?) async throws -> Response {
        guard let handle, !handle.isEmpty else {
            throw APIError.badRequest("handle: missing (POST /api/register?handle=<device token>)")
        }
        guard DevicePlatform.isHandle(handle) else {
            throw APIError.badRequest("handle: not an APNs, FCM or WNS device handle")
        }
        let hash = Self.handleHash(handle)
        let id: String
        do { id = try await hub.createRegistrationID() } catch { throw hubFailed(error) }
        // One registration per user and handle, however many requests race: the store swaps
        // atomically, and each request removes at the hub what its swap replaced.
        let stale: [OwnedRegistration]
        do {
            stale = try await store.replaceRegistrations(
                with: OwnedRegistration(id: id, owner: caller.name, handleHash: hash, hubID: id)
            )
        } catch {
            throw storeFailed(error)
        }
        for old in stale { try await removeAtHub(old.hubID) }
        return Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: .init(bytes: JSONText.string(id)))
        )
    }

    /// Creates or updates the registration at the hub: the client's category tags plus `username:<caller>`.
    func upsertRegistration(caller: Principal, id: String, body: [UInt8]) async throws -> Response {
        var owned = try await ownedRegistration(id: id, caller: caller)
        let request = try DeviceRegistrationRequest(body: body)
        if let older = request.olderPlatformName, olderPlatformNames.first(older) {
            logger.notice(
                "A client registered with an older platform name: taken as fcmv1 (FCM tokens work with FCM v1)",
                metadata: ["platform": "\(older)"]
            )
        }
        guard request.platform.accepts(handle: request.handle) else {
            throw APIError.badRequest("Handle: not a valid \(request.platform.rawValue) device handle")
        }
        let tags = try tagPolicy.tags(from: request.tags, owner: caller.name)
        let registration = Registration(
            platform: request.platform.hubPlatform,
            handle: request.handle,
            tags: tags,
            template: request.platform.template
        )
        do {
            try await hub.upsertRegistration(registration, id: owned.hubID)
        } catch  where error.isGone {
            // The hub forgot it (expired): a new hub registration behind the same client id.
            do {
                owned.hubID = try await hub.createRegistrationID()
                try await hub.upsertRegistration(registration, id: owned.hubID)
            } catch {
                throw hubFailed(error)
            }
        } catch {
            throw hubFailed(error)
        }
        owned.platform = request.platform.rawValue
        owned.tags = tags
        owned.handleHash = Self.handleHash(request.handle)
        do {
            guard try await store.updateRegistration(owned) else { throw APIError.notFound }
        } catch let error as StoreError {
            throw storeFailed(error)
        }
        return Self.empty()
    }

    /// Deletes the registration at the hub and here; only its owner may.
    func deleteRegistration(caller: Principal, id: String) async throws -> Response {
        let owned = try await ownedRegistration(id: id, caller: caller)
        try await removeAtHub(owned.hubID)
        do { _ = try await store.deleteRegistration(id: owned.id, owner: caller.name) } catch {
            throw storeFailed(error)
        }
        return Self.empty()
    }

    /// The registration if the caller owns it: 404 when nobody does, 403 when someone else does.
    private func ownedRegistration(id: String, caller: Principal) async throws -> OwnedRegistration {
        guard PathID.isValid(id) else { throw APIError.notFound }
        let found: OwnedRegistration?
        do { found = try await store.registration(id: id) } catch { throw storeFailed(error) }
        guard let found else { throw APIError.notFound }
        guard found.owner == caller.name else { throw APIError.forbidden("registration belongs to another user") }
        return found
    }

    /// A registration the hub no longer has (404, 410) is already gone.
    private func removeAtHub(_ hubID: String) async throws {
        do {
            try await hub.deleteRegistration(id: hubID)
        } catch  where error.isGone || error.isNotFound {
            return
        } catch {
            throw hubFailed(error)
        }
    }
}

/// `{"Platform":"apns"|"fcmv1"|"wns","Handle":…,"Tags":[…]}` (seed 003's `DeviceRegistration`);
/// `fcm` and `gcm` as older sample clients send them.
struct DeviceRegistrationRequest {
    let platform: DevicePlatform
    /// The platform as the client named it, when that is an older name (for a log line).
    let olderPlatformName: String?
    let handle: String
    let tags: [String]

    init(body: [UInt8]) throws(APIError) {
        let value: JSONValue
        do { value = try JSONParser.parse(body) } catch { throw .badRequest("body is not JSON: \(error.description)") }
        guard case .object(let object) = value else {
            throw .badRequest("body must be a JSON object with Platform, Handle and Tags")
        }
        // Keys as the seed writes them; ASP.NET binds them case-insensitively, so do we.
        var members: [String: JSONValue] = [:]
        for (key, value) in object { members[key.lowercased()] = value }
        guard case .string(let platformName)? = members["platform"] else {
            throw .badRequest("Platform: missing or not a string")
        }
        guard let platform = DevicePlatform(clientName: platformName) else {
            throw .badRequest("Platform: must be one of apns, fcmv1 (or fcm, gcm), wns")
        }
        guard case .string(let handle)? = members["handle"], !handle.isEmpty else {
            throw .badRequest("Handle: missing or not a string")
        }
        var tags: [String] = []
        switch members["tags"] {
        case nil, .null?:
            break
        case .array(let array)?:
            for element in array {
                guard case .string(let tag) = element else { throw .badRequest("Tags: must be an array of strings") }
                tags.append(tag)
            }
        default:
            throw .badRequest("Tags: must be an array of strings")
        }
        self.platform = platform
        olderPlatformName = DevicePlatform(rawValue: platformName.lowercased()) == nil ? platformName.lowercased() : nil
        self.handle = handle
        self.tags = tags
    }
}
