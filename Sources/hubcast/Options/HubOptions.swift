import ArgumentParser
import Foundation
import Logging
import NotificationHubs
import TextFormats

/// How to reach the hub: shared by every command that sends.
struct HubOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Notification hub name (env HUBCAST_HUB).", valueName: "name"))
    var hub: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "File holding the hub's connection string (else env HUBCAST_CONNECTION_STRING). Never passed as a flag.",
            valueName: "path"
        )
    )
    var connectionStringFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Notification Hubs REST API version (env HUBCAST_API_VERSION; default 2020-06).",
            valueName: "version"
        )
    )
    var apiVersion: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "CA bundle to verify the hub's certificate with (env HUBCAST_CA_FILE; default: the system's).",
            valueName: "path"
        )
    )
    var caFile: String?

    @Flag(
        name: .long,
        help: "Do not verify the hub's TLS certificate (test servers only; logged as a warning) (env HUBCAST_INSECURE)."
    )
    var insecure = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds one HTTP attempt may take (env HUBCAST_REQUEST_TIMEOUT; default 30).",
            valueName: "seconds"
        )
    )
    var requestTimeout: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Attempts per send, the first included (env HUBCAST_MAX_ATTEMPTS; default 5).",
            valueName: "n"
        )
    )
    var maxAttempts: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "First backoff ceiling in ms; doubles per attempt, full jitter (env HUBCAST_RETRY_BASE_MS; default 1000).",
            valueName: "ms"
        )
    )
    var retryBaseMs: Int?

    @Option(
        name: .long,
        help: ArgumentHelp("Largest backoff in ms (env HUBCAST_RETRY_MAX_MS; default 60000).", valueName: "ms")
    )
    var retryMaxMs: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Threads driving libcurl (env HUBCAST_HTTP_THREADS; default 1). One costs ~10% less CPU per send; two send ~10% more per second when the hub and Kafka keep up (with a larger --kafka-property queued.max.messages.kbytes).",
            valueName: "n"
        )
    )
    var httpThreads: Int?

    func configuration(_ settings: Settings) throws(CLIError) -> (NotificationHubConfiguration, TransportConfiguration)
    {
        guard let hubName = settings.string(hub, "hub"), !hubName.isEmpty else {
            throw .usage("--hub: no hub name (set --hub or HUBCAST_HUB)")
        }
        guard
            let text = try settings.secret(
                "connection-string",
                fileFlag: connectionStringFile,
                fileName: "connection-string-file"
            )
        else {
            throw .usage("no connection string: set HUBCAST_CONNECTION_STRING or --connection-string-file")
        }
        return try configuration(
            settings,
            hubName: hubName,
            connection: Self.connection(text, setting: "connection string")
        )
    }

    /// A connection string's text (a secret file's, trimmed) parsed; `setting` names it in the error.
    static func connection(_ text: String, setting: String) throws(CLIError) -> ConnectionString {
        do {
            return try ConnectionString(parsing: text.trimmingCharacters(in: .whitespacesAndNewlines))
        } catch {
            throw .usage(setting, error)
        }
    }

    /// True when the settings name a hub (by flag, environment or file): `--routes` names its own.
    func namesAHub(_ settings: Settings) throws(CLIError) -> Bool {
        let secret = try settings.secret(
            "connection-string",
            fileFlag: connectionStringFile,
            fileName: "connection-string-file"
        )
        return settings.string(hub, "hub") != nil || secret != nil
    }

    /// The settings every hub shares (API version, timeouts, retries, TLS, threads) around one
    /// hub's name and connection string.
    func configuration(
        _ settings: Settings,
        hubName: String,
        connection: ConnectionString
    ) throws(CLIError) -> (NotificationHubConfiguration, TransportConfiguration) {
        var config = NotificationHubConfiguration(connection: connection, hubName: hubName)
        config.apiVersion = settings.string(apiVersion, "api-version", default: "2020-06")
        config.requestTimeout = .seconds(
            try settings.int(requestTimeout, "request-timeout", default: 30, range: 1...600)
        )
        config.retry = RetryPolicy(
            maxAttempts: try settings.int(maxAttempts, "max-attempts", default: 5, range: 1...100),
            baseDelay: .milliseconds(try settings.int(retryBaseMs, "retry-base-ms", default: 1000, range: 1...600_000)),
            maxDelay: .milliseconds(try settings.int(retryMaxMs, "retry-max-ms", default: 60_000, range: 1...3_600_000))
        )
        let caPath = settings.string(caFile, "ca-file")
        // libcurl would only fail the first request, as a TLS error that looks like an unreachable hub.
        if let caPath {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: caPath, isDirectory: &isDirectory), !isDirectory.boolValue,
                FileManager.default.isReadableFile(atPath: caPath)
            else { throw .usage("--ca-file: \(LegibleText.quoted(caPath)) is not a readable file") }
        }
        var transport = TransportConfiguration(caFile: caPath, insecure: try settings.bool(insecure, "insecure"))
        transport.eventLoops = try settings.int(httpThreads, "http-threads", default: 1, range: 1...8)
        return (config, transport)
    }
}

extension HubOptions {
    /// A client of the hub these settings name, over libcurl: the commands that ask the hub
    /// directly (`send`, `outcome`, `cancel-scheduled`, the backend).
    static func client(
        _ configuration: NotificationHubConfiguration,
        _ transport: TransportConfiguration,
        logger: Logger
    ) -> NotificationHubClient {
        NotificationHubClient(
            configuration: configuration,
            transport: CurlTransport(configuration: transport, logger: logger),
            logger: logger
        )
    }

    /// An id the hub gave (of a notification, of a scheduled one), checked before it goes into a
    /// request path: letters, digits, `-` and `_`.
    static func checkID(_ id: String, of what: String) throws(CLIError) {
        guard !id.isEmpty, id.count <= 256,
            id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else {
            throw .usage("the \(what) id may hold only letters, digits, - and _, got \(LegibleText.quoted(id))")
        }
    }
}
