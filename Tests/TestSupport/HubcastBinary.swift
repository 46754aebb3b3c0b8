import Foundation

/// Runs the real `hubcast` executable that `swift build` put beside the test bundle.
public enum HubcastBinary {
    /// HUBCAST_BIN if set, else `hubcast` in the build folder of the running tests.
    public static var path: String {
        if let explicit = ProcessInfo.processInfo.environment["HUBCAST_BIN"] { return explicit }
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var dir = exe.deletingLastPathComponent()
        // The xctest bundle may be a folder: walk up until a sibling `hubcast` exists.
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("hubcast").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return "hubcast"
    }

    /// What a finished run printed and how it ended.
    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String

        public init(status: Int32, stdout: String, stderr: String) {
            self.status = status
            self.stdout = stdout
            self.stderr = stderr
        }
    }

    /// Runs hubcast to completion with optional stdin; kills it after `timeout`.
    public static func run(
        _ arguments: [String],
        stdin: String? = nil,
        environment: [String: String] = [:],
        timeout: Duration = .seconds(60)
    ) async throws -> Result {
        try await ChildProcess.run(path, arguments, stdin: stdin, environment: environment, timeout: timeout)
    }
}

/// Runs any program to completion, capturing its output.
public enum ChildProcess {
    public static func run(
        _ executable: String,
        _ arguments: [String],
        stdin: String? = nil,
        environment: [String: String] = [:],
        timeout: Duration = .seconds(60)
    ) async throws -> HubcastBinary.Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : try which(executable))
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        // Input and output through files, not pipes: a file ends where it ends, while a pipe's
        // end also waits for every other child that inherited it (see `Pipe.unshared`).
        let files = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString)")
        let input = files.appendingPathExtension("stdin"), out = files.appendingPathExtension("stdout")
        let err = files.appendingPathExtension("stderr")
        defer { for file in [input, out, err] { try? FileManager.default.removeItem(at: file) } }
        try Data((stdin ?? "").utf8).write(to: input)
        for file in [out, err] { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        let handles = try [
            FileHandle(forReadingFrom: input), FileHandle(forWritingTo: out), FileHandle(forWritingTo: err),
        ]
        // The child has its own copies once started; these go when the wait is over, or on a throw.
        defer { for handle in handles { try? handle.close() } }
        process.standardInput = handles[0]
        process.standardOutput = handles[1]
        process.standardError = handles[2]
        try process.run()
        // Waited for on a thread of its own: the wait blocks.
        nonisolated(unsafe) let child = process
        let status = await withCheckedContinuation { done in
            Thread { done.resume(returning: child.reap(terminateAfter: timeout, killAfter: timeout + .seconds(5))) }
                .start()
        }
        return HubcastBinary.Result(
            status: status,
            stdout: String(decoding: (try? Data(contentsOf: out)) ?? Data(), as: UTF8.self),
            stderr: String(decoding: (try? Data(contentsOf: err)) ?? Data(), as: UTF8.self)
        )
    }

    /// The full path of a program on PATH.
    public static func which(_ name: String) throws -> String {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw NotFound(name: name)
    }

    public struct NotFound: Error, CustomStringConvertible {
        public let name: String
        public var description: String { "\(name) is not installed: run `make setup`" }
    }
}
