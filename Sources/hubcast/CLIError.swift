/// An error that ends a command with one of hubcast's documented exit codes.
struct CLIError: Error {
    let message: String
    let exitCode: Int32

    /// Exit 2: a setting is missing or wrong; the message names it.
    static func usage(_ message: String) -> CLIError { CLIError(message: message, exitCode: 2) }
    /// Exit 3: Kafka or the hub did not answer at start-up.
    static func unreachable(_ message: String) -> CLIError { CLIError(message: message, exitCode: 3) }
    /// Exit 1: the work itself failed.
    static func failure(_ message: String) -> CLIError { CLIError(message: message, exitCode: 1) }
}
