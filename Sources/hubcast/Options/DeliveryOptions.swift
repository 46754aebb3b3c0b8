import ArgumentParser
import News
import TextFormats

/// `--platform` and `--send-at`, for the commands that build an item from flags (`send`, `produce`).
struct DeliveryOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "A platform to send the item built from flags to: template (the default), apple, fcmv1 or windows; repeat for several.",
            valueName: "platform"
        )
    )
    var platform: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "When the hub should send the item built from flags, RFC 3339 (a scheduled notification, at most 7 days ahead; default: now).",
            valueName: "time"
        )
    )
    var sendAt: String?

    /// Whether either flag was given.
    var isGiven: Bool { !platform.isEmpty || sendAt != nil }

    /// Sets the item's platforms and `sendAt` from the flags; a bad value is a usage error naming the flag.
    func apply(to item: inout NewsItem) throws {
        if !platform.isEmpty {
            do {
                item.platforms = try platform.map { name throws(NewsItemError) in
                    try NewsItem.Platform(named: name, field: "--platform")
                }
            } catch {
                throw CLIError.usage(LegibleText.sanitized(String(describing: error)))
            }
        }
        if let sendAt {
            guard let time = Timestamp(rfc3339: sendAt) else {
                throw CLIError.usage("--send-at: \(LegibleText.quoted(sendAt)) is not RFC 3339")
            }
            item.sendAt = time
        }
    }
}
