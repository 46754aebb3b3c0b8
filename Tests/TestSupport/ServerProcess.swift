import Foundation

/// A long-running server child (dev broker, emulator, nginx) whose first stdout line is its address.
public final class ServerProcess: @unchecked Sendable {
    public let process: Process
    /// The first line the server printed (its address).
    public let firstLine: String
    private let stderrFile: URL

    /// Starts `executable` and waits (up to `timeout`) for its first stdout line. The wait is a
    /// blocking read, done on a dispatch thread: on one of the two cooperative threads of a 2-core
    /// machine it stalled every other test while several suites started their servers at once.
    public init(_ executable: String, _ arguments: [String], timeout: Duration = .seconds(30)) async throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe.unshared()
        stderrFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hubcast-test-\(UUID().uuidString).stderr"
        )
        _ = FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
        process.standardOutput = out
        process.standardError = try FileHandle(forWritingTo: stderrFile)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        firstLine = await Self.firstLine(of: out.fileHandleForReading, timeout: timeout)
        guard !firstLine.isEmpty else {
            process.terminate()
            throw StartFailed(
                command: "\(executable) \(arguments.joined(separator: " "))",
                stderr: (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? ""
            )
        }
    }

    /// Reads byte by byte up to the newline, so that nothing after it is taken from the pipe.
    private static func firstLine(of handle: FileHandle, timeout: Duration) async -> String {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var line = [UInt8]()
                let deadline = ContinuousClock.now + timeout
                while ContinuousClock.now < deadline {
                    let byte = handle.readData(ofLength: 1)
                    if byte.isEmpty || byte.first == 0x0A { break }
                    line.append(contentsOf: byte)
                }
                continuation.resume(returning: String(decoding: line, as: UTF8.self))
            }
        }
    }

    /// Sends SIGTERM and waits for the exit; returns the exit status.
    @discardableResult
    public func stop() -> Int32 {
        if process.isRunning { process.terminate() }
        let status = process.reap()
        try? FileManager.default.removeItem(at: stderrFile)
        return status
    }

    /// Everything the server wrote to stderr so far.
    public var stderr: String { (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? "" }

    deinit { stop() }

    public struct StartFailed: Error, CustomStringConvertible {
        public let command: String
        public let stderr: String
        public var description: String { "\(command) printed no address; stderr:\n\(stderr)" }
    }
}

/// `hubcast dev-broker` as a child process, with its category topics created.
public final class DevBrokerProcess: @unchecked Sendable {
    public let server: ServerProcess
    public var bootstrap: String { server.firstLine }

    public init(partitions: Int = 3, extraArguments: [String] = []) async throws {
        server = try await ServerProcess(
            HubcastBinary.path,
            ["dev-broker", "--partitions", String(partitions), "--log-level", "warning"] + extraArguments
        )
    }

    @discardableResult
    public func stop() -> Int32 { server.stop() }
}
