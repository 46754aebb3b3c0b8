import Foundation
import News
import NotificationHubs
import TextFormats

/// The platforms seed 003's `PUT /api/register/{id}` names, and each one's handle shape.
public enum DevicePlatform: String, Sendable, CaseIterable {
    case apns, fcmv1, wns

    var hubPlatform: Registration.Platform {
        switch self {
        case .apns: .apple
        case .fcmv1: .fcmv1
        case .wns: .windows
        }
    }

    var template: Registration.Template {
        switch self {
        case .apns: DeviceTemplates.apns
        case .fcmv1: DeviceTemplates.fcmv1
        case .wns: DeviceTemplates.wns
        }
    }

    /// The platform a client names: the three names the hub's API uses, and the older names
    /// Microsoft's sample Android clients still send, `fcm` and `gcm`, whose registration tokens
    /// are FCM tokens (FCM v1 takes them).
    public init?(clientName: String) {
        switch clientName.lowercased() {
        case "apns": self = .apns
        case "fcmv1", "fcm", "gcm": self = .fcmv1
        case "wns": self = .wns
        default: return nil
        }
    }

    /// APNs: a 32-byte token as 64 hex digits (seed 003 sends it upper-case). FCM: the registration
    /// token's alphabet and a sane length. WNS: a channel URI, parsed as one (RFC 3986): https, no
    /// user information, a host under notify.windows.com.
    func accepts(handle: String) -> Bool {
        let utf8 = handle.utf8
        switch self {
        case .apns:
            return utf8.count == 64 && utf8.allSatisfy(Self.isHex)
        case .fcmv1:
            return (32...4096).contains(utf8.count) && utf8.allSatisfy(Self.isFCMByte)
        case .wns:
            // A parser reads `https://evil.test\@x.notify.windows.com/` as a host evil.test or refuses
            // it; a suffix match on the text read it as WNS. Printable ASCII only, `\` never.
            guard utf8.count <= 2048, utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }),
                let parts = URLComponents(string: handle), parts.scheme?.lowercased() == "https",
                parts.user == nil, parts.password == nil, parts.port == nil,
                let host = parts.percentEncodedHost?.lowercased(), host.hasSuffix(".notify.windows.com")
            else { return false }
            return host.utf8.allSatisfy { Self.isHostByte($0) }
        }
    }

    /// `POST /api/register?handle=` does not say the platform yet: any platform's shape will do.
    static func isHandle(_ handle: String) -> Bool { allCases.contains { $0.accepts(handle: handle) } }

    private static func isHex(_ b: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(b)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(b)
    }

    private static func isHostByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"),
            UInt8(ascii: "."):
            true
        default: false
        }
    }

    private static func isFCMByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "."):
            true
        default:
            false
        }
    }
}

/// Which tags a client may put on its own registration: the configured category tags, nothing else.
/// `username:` tags are the server's: it adds the caller's own, and no client may choose one.
public struct TagPolicy: Sendable {
    public let allowed: Set<String>
    public static let maxClientTags = 59

    public init(allowed: [String]) { self.allowed = Set(allowed) }

    /// The tags to register: the client's (deduplicated, checked) plus `username:<owner>`.
    func tags(from client: [String], owner: String) throws(APIError) -> [String] {
        var seen = Set<String>()
        var tags: [String] = []
        for tag in client where seen.insert(tag).inserted {
            // Counted as distinct tags: a client repeating one tag asks for it once.
            guard tags.count < Self.maxClientTags else {
                throw .badRequest("Tags: at most \(Self.maxClientTags) distinct tags")
            }
            guard TagSyntax.isTag(tag) else {
                throw .badRequest("Tags: \(LegibleText.quoted(tag)) is not a Notification Hubs tag")
            }
            guard allowed.contains(tag) else {
                throw .forbidden(
                    "Tags: \(LegibleText.quoted(tag)) may not be set by a client (allowed: \(allowed.sorted().joined(separator: ", ")))"
                )
            }
            tags.append(tag)
        }
        return tags + ["username:" + owner]
    }
}

/// User names become `username:<name>` tags, so they follow NH's tag syntax.
enum UserName {
    static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= NewsItemDecoder.maxUserNameLength
            && name.utf8.allSatisfy(TagSyntax.isTagByte)
    }
}

/// Registration and payload ids in paths: NH's ids are digits and dashes; payload ids are news item ids.
enum PathID {
    static func isValid(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count) && id.utf8.allSatisfy { TagSyntax.isTagByte($0) && $0 != UInt8(ascii: ":") }
    }
}
