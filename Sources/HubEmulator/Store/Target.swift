/// One thing a notification can be delivered to: a registration, or one template (or the native
/// channel) of an installation.
struct Target: Sendable {
    /// `template`, or the native format (`apple`, `fcmv1`, …) it accepts.
    let format: String
    let tags: Set<String>
    let template: CompiledTemplate?
    /// The registration or installation it came from.
    let owner: String

    /// `registration:<id>` or `installation:<id>`.
    var device: String {
        (owner.hasPrefix("r:") ? "registration:" : "installation:") + owner.dropFirst(2)
    }
}

/// NH's install platforms mapped to the send format names.
enum PlatformFormat {
    static func format(ofInstallationPlatform platform: String) -> String {
        switch platform.lowercased() {
        case "apns": "apple"
        case "fcmv1": "fcmv1"
        case "gcm", "fcm": "gcm"
        case "wns": "windows"
        default: platform.lowercased()
        }
    }
}
