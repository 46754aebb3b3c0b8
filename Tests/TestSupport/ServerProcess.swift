import Foundation

/// A long-running server child (dev broker, emulator, nginx) whose first stdout line is its address.
public final class ServerProcess: @unchecked Sendable {
    public let process: Process
    /// The first line the server printed (its address).
    public let firstLine: String
    private let stderrFile: URL

    /// Starts `executable` and waits (up to `timeout`) for its first stdout line.
    public init(_ executable: String, _ arguments: [String], timeout: Duration = .seconds(30)) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        stderrFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hubcast-test-\(UUID().uuidString).stderr"
        )
        _ = FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
        process.standardOutput = out
        process.standardError = try FileHandle(forWritingTo: stderrFile)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read byte by byte up to the newline so nothing after it is consumed from the pipe.
        var line = [UInt8]()
        let handle = out.fileHandleForReading
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let byte = handle.readData(ofLength: 1)
            if byte.isEmpty { break }
            if byte.first == 0x0A { break }
            line.append(contentsOf: byte)
        }
        firstLine = String(decoding: line, as: UTF8.self)
        guard !firstLine.isEmpty else {
            process.terminate()
            throw StartFailed(
                command: "\(executable) \(arguments.joined(separator: " "))",
                stderr: (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? ""
            )
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

    public init(partitions: Int = 3, extraArguments: [String] = []) throws {
        server = try ServerProcess(
            HubcastBinary.path,
            ["dev-broker", "--partitions", String(partitions), "--log-level", "warning"] + extraArguments
        )
    }

    @discardableResult
    public func stop() -> Int32 { server.stop() }
}
