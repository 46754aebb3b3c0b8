import NotificationHubs
import TextFormats

extension CLIError {
    /// Exit 2 for a setting whose value a library refused, its reason made legible: library errors
    /// may quote the value as given, and a terminal must not receive its control characters raw.
    static func usage(_ setting: String, _ error: some Error) -> CLIError {
        .usage("\(setting): " + LegibleText.sanitized(String(describing: error)))
    }
}
