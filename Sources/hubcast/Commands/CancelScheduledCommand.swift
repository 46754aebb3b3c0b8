import ArgumentParser
import NotificationHubs
import TextFormats

/// `hubcast cancel-scheduled ID`: cancels a notification the hub keeps for later.
struct CancelScheduledCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel-scheduled",
        abstract: "Cancel a scheduled notification before the hub sends it.",
        discussion: """
            Cancels one scheduled notification (DELETE /{hub}/schedulednotifications/{id}, Standard tier). The id is \
            the one `hubcast run` prints for each item with a sendAt (a {"scheduled":{"id":…}} line on stdout, and \
            the "Scheduled notification" log line), or that `hubcast send --send-at` prints. Exit 0 when cancelled, \
            1 when the hub has no scheduled notification of that id (never scheduled, already sent or already \
            cancelled), 2 for a configuration error or refused credentials, 3 when the hub cannot be reached.
            """
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var hubOptions: HubOptions

    @Argument(help: "The scheduled notification's id (the last segment of the schedule's Location).")
    var id: String

    func run() async throws {
        let settings = try await common.settings()
        let logger = try common.bootstrapLogging(settings, label: "hubcast.cancel-scheduled")
        let (hubConfig, transportConfig) = try hubOptions.configuration(settings)
        try HubOptions.checkID(id, of: "scheduled notification")
        let client = HubOptions.client(hubConfig, transportConfig, logger: logger)
        do {
            try await client.cancelScheduled(id: id)
        } catch {
            switch error.status {
            case 404:
                throw CLIError.failure(
                    "the hub has no scheduled notification \(id): never scheduled, already sent or already cancelled"
                )
            case 401:
                throw CLIError.usage("the hub refused the credentials: \(LegibleText.sanitized(error.message))")
            case 403:
                throw CLIError.failure(
                    "the hub refused (403): scheduled notifications need the Standard tier and a key with Send rights"
                )
            case nil where [.transport, .timeout, .tls].contains(error.reason):
                throw CLIError.unreachable(
                    "could not reach the hub at \(hubConfig.connection.baseURL): \(LegibleText.sanitized(error.message))"
                )
            default:
                throw CLIError.failure("the hub did not cancel it: \(LegibleText.sanitized(String(describing: error)))")
            }
        }
        print("cancelled \(id)")
    }
}
