import ArgumentParser
import News
import TextFormats

/// `--platform`, for the commands that build an item from flags (`send`, `produce`).
struct PlatformOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "A platform to send the item built from flags to: template (the default), apple, fcmv1 or windows; repeat for several.",
            valueName: "platform"
        )
    )
    var platform: [String] = []

    /// The platforms named, nil for none; a bad name is a usage error naming the flag.
    func platforms() throws -> [NewsItem.Platform]? {
        guard !platform.isEmpty else { return nil }
        do {
            return try platform.map { name throws(NewsItemError) in
                try NewsItem.Platform(named: name, field: "--platform")
            }
        } catch {
            throw CLIError.usage(LegibleText.sanitized(String(describing: error)))
        }
    }
}
