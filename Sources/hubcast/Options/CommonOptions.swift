import ArgumentParser
import Logging
import NotificationHubs
import TextFormats

/// Options every command has: the config file and the log level.
struct CommonOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Config file: a JSON object (a .json file) or `name = value` lines, keys as the long flags (env HUBCAST_CONFIG).",
            valueName: "path"
        )
    )
    var config: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Log level on stderr: trace, debug, info, notice, warning, error, critical (env HUBCAST_LOG_LEVEL; default info).",
            valueName: "level"
        )
    )
    var logLevel: String?

    func settings() async throws(CLIError) -> Settings { try await Settings.load(configPath: config) }

    /// Sends swift-log to stderr at the chosen level and returns the command's logger.
    func bootstrapLogging(_ settings: Settings, label: String) throws(CLIError) -> Logger {
        let text = settings.string(logLevel, "log-level", default: "info")
        guard let level = Logger.Level(rawValue: text) else {
            throw .usage(
                "--log-level: \(LegibleText.quoted(text)) is not one of trace, debug, info, notice, warning, error, critical"
            )
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: label)
    }
}
