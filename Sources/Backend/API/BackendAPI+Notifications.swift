import Foundation
import Hummingbird
import News
import NotificationHubs
import TextFormats

/// Seed 003's `POST /api/notifications` and seed 001's `GET /api/notifications/{id}`.
extension BackendAPI {
    static let defaultSecureHeadline = "Secure notification"

    /// Publishes a news item addressed to one user. Anyone may notify themselves; notifying someone
    /// else needs the `sender` role. Secure: the payload is stored first and the item carries only its id.
    func notify(
        caller: Principal,
        to: String?,
        pns: String?,
        secureFlag: String?,
        category: String?,
        contentType: String?,
        body: [UInt8]
    ) async throws -> Response {
        let recipient = to ?? caller.name
        guard UserName.isValid(recipient) else {
            throw APIError.badRequest("to_tag: not a user name (letters, digits and _@#.:-)")
        }
        guard recipient == caller.name || caller.isSender else {
            throw APIError.forbidden("only users with the sender role may notify other users")
        }
        if let pns, !["apns", "fcmv1", "fcm", "gcm", "wns", "template"].contains(pns.lowercased()) {
            throw APIError.badRequest("pns: must be apns, fcmv1, wns or template")
        }
        let chosenCategory = category ?? configuration.notifyCategory
        guard configuration.categories.contains(chosenCategory) || chosenCategory == configuration.notifyCategory else {
            throw APIError.badRequest("category: not one of the configured categories")
        }
        let message = try NotifyBody(
            bytes: body,
            contentType: contentType,
            defaultMessage: "Message from \(caller.name)"
        )
        let secure = message.secure ?? Self.flag(secureFlag)
        let expiresAt = now() + configuration.payloadTTL

        let item: NewsItem
        if secure {
            let id = try await storeSecurePayload(message.text, for: recipient, expiresAt: expiresAt)
            item = NewsItem(
                id: id,
                headline: Self.defaultSecureHeadline,
                category: chosenCategory,
                users: [recipient],
                secure: true,
                expiresAt: Self.timestamp(expiresAt)
            )
        } else {
            item = NewsItem(
                id: UUID().uuidString.lowercased(),
                headline: message.text,
                category: chosenCategory,
                users: [recipient]
            )
        }
        do {
            try await publisher.publish(item)
        } catch {
            logger.error("Publishing a notification failed", metadata: ["error": "\(error.description)"])
            throw APIError.unavailable("could not publish the notification; try again")
        }
        return Self.json(["id": .string(item.id), "secure": .bool(secure)])
    }

    /// Seed 001: the payload, to a user in the item's audience only; everyone else gets the same 404
    /// as for an id that does not exist.
    func securePayload(caller: Principal, id: String) async throws -> Response {
        guard PathID.isValid(id) else { throw APIError.notFound }
        let found: SecurePayload?
        do { found = try await store.payload(id: id, now: now()) } catch { throw storeFailed(error) }
        guard let payload = found, try await isInAudience(caller, payload) else { throw APIError.notFound }
        var members: [String: JSONText.Value] = [
            "Id": Int64(payload.id).map { .int($0) } ?? .string(payload.id), "Payload": .string(payload.payload),
        ]
        if let body = payload.body { members["Body"] = .string(body) }
        if let url = payload.url { members["Url"] = .string(url) }
        return Self.json(members)
    }

    /// In the audience: named in `users`, or one of the caller's devices (with their `username:` tag)
    /// matches the item's tag expression.
    func isInAudience(_ caller: Principal, _ payload: SecurePayload) async throws -> Bool {
        if let users = payload.users { return users.contains(caller.name) }
        guard let text = payload.tagExpression, let expression = try? TagExpression(parsing: text) else { return false }
        let userTag = "username:" + caller.name
        if expression.matches([userTag]) { return true }
        let devices: [OwnedRegistration]
        do { devices = try await store.registrations(owner: caller.name) } catch { throw storeFailed(error) }
        return devices.contains { expression.matches(Set($0.tags).union([userTag])) }
    }

    /// A numeric id (seed 001's client reads `secureId` as an int), then the payload under it.
    private func storeSecurePayload(_ text: String, for recipient: String, expiresAt: Int64) async throws -> String {
        do {
            // A newsroom item may already use a numeric id: take the next number then.
            for _ in 0..<5 {
                let id = String(try await store.nextPayloadID())
                if try await store.insertPayload(
                    SecurePayload(id: id, users: [recipient], tagExpression: nil, payload: text, expiresAt: expiresAt)
                ) {
                    return id
                }
            }
        } catch {
            throw storeFailed(error)
        }
        throw APIError.unavailable("no free payload id")
    }

    static func timestamp(_ epochSeconds: Int64) -> Timestamp? {
        Timestamp(rfc3339: CivilDate.rfc3339(epochSeconds: Double(epochSeconds)))
    }

    static func flag(_ text: String?) -> Bool {
        guard let text else { return false }
        return ["true", "1", "yes"].contains(text.lowercased())
    }
}

/// The message of `POST /api/notifications`: ASP.NET's `[FromBody] string` (a JSON string), an object
/// `{"message":…,"secure":…}`, plain text, or nothing (seed 003's client sends no body).
struct NotifyBody {
    let text: String
    let secure: Bool?

    init(bytes: [UInt8], contentType: String?, defaultMessage: String) throws(APIError) {
        let isJSON = contentType?.lowercased().hasPrefix("application/json") ?? false
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            (text, secure) = (defaultMessage, nil)
        } else if isJSON || bytes.first == UInt8(ascii: "{") || bytes.first == UInt8(ascii: "\"") {
            let value: JSONValue
            do { value = try JSONParser.parse(bytes) } catch {
                throw .badRequest("body is not JSON: \(error.description)")
            }
            switch value {
            case .string(let s):
                (text, secure) = (s, nil)
            case .object(let object):
                guard case .string(let s)? = object["message"] else {
                    throw .badRequest("message: missing or not a string")
                }
                var flag: Bool?
                switch object["secure"] {
                case nil, .null?: flag = nil
                case .bool(let b)?: flag = b
                default: throw .badRequest("secure: must be true or false")
                }
                (text, secure) = (s, flag)
            default:
                throw .badRequest("body must be a JSON string or an object with message")
            }
        } else {
            guard let s = String(validating: bytes, as: UTF8.self) else { throw .badRequest("body is not UTF-8 text") }
            (text, secure) = (s, nil)
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, trimmed.count <= NewsItemDecoder.maxHeadlineLength else {
            throw .badRequest("message: 1 to \(NewsItemDecoder.maxHeadlineLength) characters")
        }
    }
}
