import TextFormats

/// A native payload that would be refused by the hub, or accepted and then dropped or delayed by
/// its platform; safe to log (it names the rule, never the payload).
public struct LintViolation: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Rule: String, Sendable, CaseIterable {
        /// Over the hub's 64 KB request limit.
        case hubSize = "hub-size"
        /// Over the platform's payload limit.
        case size
        /// Not a JSON object.
        case json
        /// APNs: no `aps` dictionary.
        case aps
        /// APNs: `apns-push-type` missing, unknown, or not what the payload is.
        case pushType = "push-type"
        /// APNs: `apns-priority` or `apns-expiration` not a value APNs takes.
        case apnsHeader = "apns-header"
        /// FCM v1: the legacy GCM shape, which Google no longer delivers.
        case legacyGCM = "legacy-gcm"
        /// FCM v1: not the shape of an HTTP v1 message.
        case fcmShape = "fcm-shape"
        /// WNS: not well-formed XML.
        case xml
        /// WNS: `X-WNS-Type` missing, unknown, or not the XML's root.
        case wnsType = "wns-type"
    }

    public let platform: NativePlatform
    public let rule: Rule
    public let reason: String

    public init(_ platform: NativePlatform, _ rule: Rule, _ reason: String) {
        self.platform = platform
        self.rule = rule
        self.reason = reason
    }

    public var description: String { "\(platform) payload breaks rule \(rule.rawValue): \(reason)" }
}

/// The rules a native payload must keep before it is sent, one place for the sender and the
/// emulator. They are the platforms' documented limits and shapes: what the hub would refuse
/// (its 64 KB) and what it would accept only for the platform to drop (a 5 KB APNs alert, an FCM
/// message in the retired GCM shape, a toast sent as a tile).
public enum NativeLint {
    public static let hubMaxBytes = 64 * 1024

    /// `header` looks a platform header up by its lower-case name.
    public static func check(
        _ platform: NativePlatform,
        payload: [UInt8],
        header: (String) -> String?
    ) -> LintViolation? {
        guard payload.count <= hubMaxBytes else {
            return LintViolation(platform, .hubSize, "\(payload.count) bytes, over the hub's \(hubMaxBytes)")
        }
        switch platform {
        case .apple: return apple(payload, header)
        case .fcmv1: return fcmv1(payload)
        case .windows: return windows(payload, header)
        }
    }

    static let apnsPushTypes: Set<String> = [
        "alert", "background", "voip", "complication", "fileprovider", "mdm", "location", "liveactivity",
        "pushtotalk", "widgets", "controls",
    ]

    private static func apple(_ payload: [UInt8], _ header: (String) -> String?) -> LintViolation? {
        func violation(_ rule: LintViolation.Rule, _ reason: String) -> LintViolation {
            LintViolation(.apple, rule, reason)
        }
        let pushType = header("apns-push-type")
        let limit = pushType == "voip" ? 5120 : NativePlatform.apple.maxPayloadBytes
        guard payload.count <= limit else {
            return violation(.size, "\(payload.count) bytes, over APNs' \(limit)")
        }
        guard case .object(let root)? = try? JSONParser.parse(payload) else {
            return violation(.json, "the payload is not a JSON object")
        }
        guard case .object(let aps)? = root["aps"] else {
            return violation(.aps, "no \"aps\" dictionary")
        }
        guard let pushType else { return violation(.pushType, "no apns-push-type header") }
        guard apnsPushTypes.contains(pushType) else {
            return violation(.pushType, "apns-push-type \"\(pushType.prefix(40))\" is not one APNs knows")
        }
        let shows = aps["alert"] != nil || aps["badge"] != nil || aps["sound"] != nil
        let priority = header("apns-priority")
        if let priority, !["1", "5", "10"].contains(priority) {
            return violation(.apnsHeader, "apns-priority must be 10, 5 or 1, not \"\(priority.prefix(20))\"")
        }
        if let expiration = header("apns-expiration"), expiration.isEmpty || !expiration.utf8.allSatisfy(isDigit) {
            return violation(.apnsHeader, "apns-expiration must be UNIX epoch seconds")
        }
        switch pushType {
        case "alert" where !shows:
            return violation(.pushType, "an alert push has no alert, badge or sound in \"aps\"")
        case "background":
            guard !shows else { return violation(.pushType, "a background push must not carry alert, badge or sound") }
            guard aps["content-available"] == .number(1) else {
                return violation(.pushType, "a background push needs \"content-available\": 1")
            }
            guard priority == "5" else { return violation(.pushType, "a background push must have apns-priority 5") }
        default: break
        }
        return nil
    }

    /// Top-level members of the legacy GCM/FCM message, none of which an HTTP v1 message has.
    static let legacyKeys: Set<String> = [
        "data", "notification", "time_to_live", "delay_while_idle", "collapse_key", "registration_ids", "to",
        "priority", "content_available", "restricted_package_name", "dry_run",
    ]

    private static func fcmv1(_ payload: [UInt8]) -> LintViolation? {
        func violation(_ rule: LintViolation.Rule, _ reason: String) -> LintViolation {
            LintViolation(.fcmv1, rule, reason)
        }
        guard payload.count <= NativePlatform.fcmv1.maxPayloadBytes else {
            return violation(.size, "\(payload.count) bytes, over FCM's \(NativePlatform.fcmv1.maxPayloadBytes)")
        }
        guard case .object(let root)? = try? JSONParser.parse(payload) else {
            return violation(.json, "the payload is not a JSON object")
        }
        if let legacy = root.keys.sorted().first(where: legacyKeys.contains) {
            return violation(.legacyGCM, "top-level \"\(legacy)\" is the retired GCM shape: put it in \"message\"")
        }
        guard case .object(let message)? = root["message"] else {
            return violation(.fcmShape, "no \"message\" object")
        }
        if let notification = message["notification"] {
            guard case .object(let fields) = notification else {
                return violation(.fcmShape, "message.notification must be an object")
            }
            for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
                guard ["title", "body", "image"].contains(name) else {
                    return violation(
                        .fcmShape,
                        "message.notification takes title, body and image, not \"\(name.prefix(40))\""
                    )
                }
                guard case .string = value else {
                    return violation(.fcmShape, "message.notification.\(name) must be a string")
                }
            }
        }
        if let reason = flatStrings(message["data"], "message.data") { return violation(.fcmShape, reason) }
        if let android = message["android"] {
            guard case .object(let fields) = android else {
                return violation(.fcmShape, "message.android must be an object")
            }
            if let priority = fields["priority"], priority != .string("NORMAL"), priority != .string("HIGH") {
                return violation(.fcmShape, "message.android.priority must be NORMAL or HIGH")
            }
            if let ttl = fields["ttl"] {
                guard case .string(let text) = ttl, isDuration(text) else {
                    return violation(.fcmShape, "message.android.ttl must be a duration in seconds such as \"3600s\"")
                }
            }
            if let reason = flatStrings(fields["data"], "message.android.data") { return violation(.fcmShape, reason) }
        }
        return nil
    }

    /// FCM's data maps: string values only.
    private static func flatStrings(_ value: JSONValue?, _ path: String) -> String? {
        guard let value else { return nil }
        guard case .object(let map) = value else { return "\(path) must be an object of strings" }
        for (name, element) in map.sorted(by: { $0.key < $1.key }) {
            guard case .string = element else { return "\(path).\(name.prefix(40)) must be a string" }
        }
        return nil
    }

    /// `3600s`, `0.5s`: protobuf's Duration as JSON writes it.
    private static func isDuration(_ text: String) -> Bool {
        guard text.hasSuffix("s") else { return false }
        let number = text.dropLast().split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(number.count), !number[0].isEmpty, number[0].utf8.allSatisfy(isDigit) else {
            return false
        }
        return number.count == 1 || (1...9).contains(number[1].count) && number[1].utf8.allSatisfy(isDigit)
    }

    static let wnsTypes = ["wns/toast": "toast", "wns/tile": "tile", "wns/badge": "badge"]

    private static func windows(_ payload: [UInt8], _ header: (String) -> String?) -> LintViolation? {
        func violation(_ rule: LintViolation.Rule, _ reason: String) -> LintViolation {
            LintViolation(.windows, rule, reason)
        }
        guard payload.count <= NativePlatform.windows.maxPayloadBytes else {
            return violation(.size, "\(payload.count) bytes, over WNS' \(NativePlatform.windows.maxPayloadBytes)")
        }
        guard let type = header("x-wns-type") else { return violation(.wnsType, "no X-WNS-Type header") }
        if type == "wns/raw" { return nil }
        guard let root = wnsTypes[type] else {
            return violation(
                .wnsType,
                "X-WNS-Type \"\(type.prefix(40))\" is not wns/toast, wns/tile, wns/badge or wns/raw"
            )
        }
        let element: String
        do {
            element = try XMLShape.rootElement(of: payload)
        } catch {
            return violation(.xml, "not well-formed XML: \(error)")
        }
        guard element == root else {
            return violation(.wnsType, "X-WNS-Type \(type) but the XML's root is <\(element.prefix(40))>")
        }
        return nil
    }

    private static func isDigit(_ b: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) }
}
