import ArgumentParser
import Backend
import Foundation
import Kafka
import Logging
import News
import Newsroom
import NotificationHubs
import ServiceLifecycle
import TextFormats

/// `hubcast backend`: the app backend (seeds 001–003).
struct BackendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backend",
        abstract: "Run the app backend: device registration, notify a user, secure push.",
        subcommands: [BackendServeCommand.self, BackendAddUserCommand.self],
        defaultSubcommand: BackendServeCommand.self
    )
}

/// `hubcast backend add-user`: writes one bcrypt entry to the users file; the password comes from stdin or a prompt.
struct BackendAddUserCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-user",
        abstract: "Add or replace a user in the backend's users file (bcrypt).",
        discussion: """
            The password is read from the first line of stdin when stdin is not a terminal, else from a prompt \
            that does not echo; it is never a flag. The file is written with mode 0600.
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp("The users file to create or update (env HUBCAST_USERS_FILE).", valueName: "path")
    )
    var usersFile: String?

    @Option(name: .long, help: ArgumentHelp("User name (their tag is username:<name>).", valueName: "name"))
    var name: String

    @Option(
        name: .long,
        help: ArgumentHelp("A role, e.g. sender (may notify other users); repeatable.", valueName: "role")
    )
    var role: [String] = []

    @Option(name: .long, help: ArgumentHelp("bcrypt cost, 4–31 (default 12).", valueName: "n"))
    var cost: Int = 12

    func run() throws {
        guard let path = usersFile ?? ProcessInfo.processInfo.environment["HUBCAST_USERS_FILE"] else {
            throw CLIError.usage("--users-file: no users file (set --users-file or HUBCAST_USERS_FILE)")
        }
        guard (4...31).contains(cost) else { throw CLIError.usage("--cost: must be 4 to 31") }
        var file = UsersFile()
        if FileManager.default.fileExists(atPath: path) {
            do { file = try UsersFile.load(path: path) } catch {
                throw CLIError.usage("--users-file: \(error.description)")
            }
        }
        let password = try readPassword()
        do {
            try file.set(name: name, password: password, roles: Set(role), cost: UInt8(cost))
            try file.write(path: path)
        } catch {
            throw CLIError.usage(error.description)
        }
        FileHandle.standardError.write(
            Data("hubcast backend: user \(LegibleText.quoted(name)) written to \(LegibleText.quoted(path))\n".utf8)
        )
    }

    private func readPassword() throws -> String {
        if isatty(STDIN_FILENO) == 0 {
            guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                throw CLIError.usage("no password on stdin")
            }
            return line
        }
        guard let raw = getpass("Password for \(name): ") else { throw CLIError.usage("no password given") }
        let password = String(cString: raw)
        guard !password.isEmpty else { throw CLIError.usage("empty password") }
        return password
    }
}
