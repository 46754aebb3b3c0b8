import ArgumentParser
import Foundation

/// hubcast: breaking news from Kafka to Azure Notification Hubs.
@main
struct Hubcast: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hubcast",
        abstract: "Broadcast breaking news from Kafka as Azure Notification Hubs template pushes.",
        discussion: """
            Settings come from flags, then HUBCAST_<NAME> environment variables, then the file named by \
            --config (or HUBCAST_CONFIG), in that order. Secrets are read from the environment or a file only.
            Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error, 3 Kafka or the hub \
            unreachable at start-up.
            """,
        subcommands: [
            RunCommand.self, ReplayCommand.self, DemoCommand.self, SendCommand.self, ProduceCommand.self,
            CanaryCommand.self, OutcomeCommand.self, CancelScheduledCommand.self, EmulatorCommand.self,
            DevBrokerCommand.self, BackendCommand.self,
        ]
    )

    /// Maps errors to the documented exit codes (argument errors are 2, not ArgumentParser's 64).
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as CLIError {
            FileHandle.standardError.write(Data("hubcast: \(error.message)\n".utf8))
            Foundation.exit(error.exitCode)
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .success {
                print(message)
                Foundation.exit(0)
            }
            FileHandle.standardError.write(Data("\(message)\n".utf8))
            Foundation.exit(code == .validationFailure ? 2 : code.rawValue)
        }
    }
}
