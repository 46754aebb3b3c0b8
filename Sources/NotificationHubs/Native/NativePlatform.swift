/// A push service a hub sends to natively, by its `ServiceBusNotification-Format` name.
public enum NativePlatform: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// APNs.
    case apple
    /// Firebase Cloud Messaging HTTP v1.
    case fcmv1
    /// WNS.
    case windows

    /// The `ServiceBusNotification-Format` value.
    public var format: String { rawValue }

    public var description: String { rawValue }

    /// The largest payload the platform delivers, in bytes (APNs VoIP pushes may be 5 KB).
    public var maxPayloadBytes: Int {
        switch self {
        case .apple, .fcmv1: 4096
        case .windows: 5000
        }
    }
}

/// What one send carries: a template's properties, which the hub renders into every matching
/// device's template, or one platform's own payload.
public enum HubNotification: Sendable {
    case template([(String, String)])
    /// Boxed, so that the enum stays one word and its copy one retain: a native payload is a
    /// struct of several strings, and a notification is passed by value from the planner to the
    /// request.
    indirect case native(NativeNotification)

    /// The `ServiceBusNotification-Format` value.
    public var format: String {
        switch self {
        case .template: "template"
        case .native(let n): n.platform.format
        }
    }

    /// The native platform; nil for a template send.
    public var platform: NativePlatform? {
        guard case .native(let n) = self else { return nil }
        return n.platform
    }
}

/// One platform's payload with the headers the platform reads (`apns-push-type`, `X-WNS-Type`, …).
public struct NativeNotification: Sendable, Equatable {
    public let platform: NativePlatform
    public let payload: [UInt8]
    /// Besides `Content-Type` and the hub's own headers.
    public let headers: [HTTPHeader]

    public init(platform: NativePlatform, payload: [UInt8], headers: [HTTPHeader] = []) {
        self.platform = platform
        self.payload = payload
        self.headers = headers
    }

    /// JSON for APNs and FCM v1; XML for WNS toasts, tiles and badges, bytes for WNS raw.
    public var contentType: String {
        switch platform {
        case .apple, .fcmv1: "application/json;charset=utf-8"
        case .windows: header("x-wns-type") == "wns/raw" ? "application/octet-stream" : "application/xml"
        }
    }

    /// A platform header's value, by its lower-case name.
    public func header(_ lowercasedName: String) -> String? {
        headers.first { $0.name.lowercased() == lowercasedName }?.value
    }

    /// The first rule of its platform the notification breaks (`NativeLint`), nil if none.
    public var violation: LintViolation? {
        NativeLint.check(platform, payload: payload, header: header)
    }
}
