import ArgumentParser
import Foundation
import NotificationHubs
import TextFormats

/// `hubcast outcome ID`: what the hub did with one sent notification (per-message telemetry).
struct OutcomeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outcome",
        abstract: "Print what the hub did with one sent notification (per-message telemetry, Standard tier).",
        discussion: """
            Asks the hub for the notification's telemetry (GET /{hub}/messages/{id}) and prints it as one JSON line on \
            stdout: its state (Enqueued, Processing, Completed, NoTargetFound, Abandoned, …) and, per platform, how \
            many devices each outcome had (Success: the platform's service took it). The id is the last segment of \
            the send's Location, as `hubcast send` prints it. The hub has telemetry only once it has processed the \
            send (up to 30 minutes later); --wait asks again every 10 s until the state is final. Exit 0 when the \
            telemetry was printed, 1 when the hub has none for the id (yet) or its tier keeps none, 2 for a \
            configuration error or refused credentials, 3 when the hub cannot be reached.
            """
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var hubOptions: HubOptions

    @Argument(help: "The notification id (the last segment of the send's Location).")
    var id: String

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Ask again every 10 s, for up to this long, until the hub has telemetry in a final state (default 0: ask once).",
            valueName: "seconds"
        )
    )
    var wait: Int?

    /// How long the hub is given between two asks: its reference says to retry a 404 after 10 s.
    static let interval: Duration = .seconds(10)

    func run() async throws {
        let settings = try await common.settings()
        let logger = try common.bootstrapLogging(settings, label: "hubcast.outcome")
        let (hubConfig, transportConfig) = try hubOptions.configuration(settings)
        let wait = self.wait ?? 0
        guard (0...3600).contains(wait) else { throw CLIError.usage("--wait must be between 0 and 3600, got \(wait)") }
        try HubOptions.checkID(id, of: "notification")
        let client = HubOptions.client(hubConfig, transportConfig, logger: logger)
        let deadline = ContinuousClock.now + .seconds(wait)
        while true {
            var details: NotificationDetails?
            var failure: SendFailure?
            do { details = try await client.notificationDetails(id: id) } catch { failure = error }
            // No time left for another ask: this answer is the one to give.
            let last = ContinuousClock.now + Self.interval > deadline
            if let failure { try Self.check(failure, hub: hubConfig.connection.baseURL, id: id, final: last) }
            if let details, details.isFinal || last {
                print(Self.line(id: id, details))
                return
            }
            try await Task.sleep(for: Self.interval)
        }
    }

    /// Whether a failed ask ends the command (and how), or is asked again.
    static func check(_ error: SendFailure, hub: String, id: String, final: Bool) throws {
        switch error.status {
        case 404 where !final:
            return
        case 404:
            throw CLIError.failure(
                "the hub has no telemetry for notification \(id) (yet: it has it once it has processed the send, up to 30 minutes later; --wait asks again)"
            )
        case 403:
            throw CLIError.failure("the hub keeps no per-message telemetry: its tier is below Standard")
        case 401:
            throw CLIError.usage("the hub refused the credentials: \(LegibleText.sanitized(error.message))")
        case nil where [.transport, .timeout, .tls].contains(error.reason):
            throw CLIError.unreachable("could not reach the hub at \(hub): \(LegibleText.sanitized(error.message))")
        default:
            throw CLIError.failure(
                "the hub did not answer with telemetry: \(LegibleText.sanitized(String(describing: error)))"
            )
        }
    }

    /// `{"id":"…","state":"Completed","final":true,"platforms":{"Apns":{"Success":3}}}`.
    static func line(id: String, _ details: NotificationDetails) -> String {
        var w = JSONWriter(reservingCapacity: 256)
        w.beginObject()
        w.member("id", id)
        w.member("state", details.state)
        w.key("final")
        w.bool(details.isFinal)
        w.key("platforms")
        w.beginObject()
        for (platform, outcomes) in details.platforms {
            w.key(platform)
            w.beginObject()
            for (name, count) in outcomes {
                w.key(name)
                w.number(Int64(count))
            }
            w.endObject()
        }
        w.endObject()
        w.endObject()
        return String(decoding: w.bytes, as: UTF8.self)
    }
}
