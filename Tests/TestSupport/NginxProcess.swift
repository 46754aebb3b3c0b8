import Foundation

/// nginx on 127.0.0.1 answering `return 201` to everything, over TLS with a fresh self-signed
/// certificate (or plain http), offering HTTP/2 beside HTTP/1.1 if asked (as the hub does); each
/// request's protocol and status go to its access log. Its files live in a temporary folder
/// removed on stop.
public final class NginxProcess: @unchecked Sendable {
    public let port: Int
    public let directory: URL
    /// The self-signed certificate, usable as a CA file; nil for plain http.
    public let certificate: String?
    private let process: Process

    public init(tls: Bool, offersHTTP2: Bool = false, workers: Int = 1) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hubcast-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = freeLoopbackPort()
        var listen = "listen 127.0.0.1:\(port);"
        if tls {
            let cert = directory.appendingPathComponent("cert.pem").path,
                key = directory.appendingPathComponent("key.pem").path
            let made = try await ChildProcess.run(
                "openssl",
                [
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                ]
            )
            guard made.status == 0 else { throw ChildProcess.NotFound(name: "openssl (\(made.stderr))") }
            certificate = cert
            let http2 = offersHTTP2 ? " http2" : ""
            listen = "listen 127.0.0.1:\(port) ssl\(http2); ssl_certificate \(cert); ssl_certificate_key \(key);"
        } else {
            certificate = nil
        }
        let d = directory.path
        let config = """
            daemon off; master_process on; worker_processes \(workers); pid \(d)/nginx.pid; error_log \(d)/error.log warn;
            events { worker_connections 4096; }
            http {
              log_format p '$server_protocol $status'; access_log \(d)/access.log p;
              client_body_temp_path \(d)/body; proxy_temp_path \(d)/proxy; fastcgi_temp_path \(d)/fastcgi;
              uwsgi_temp_path \(d)/uwsgi; scgi_temp_path \(d)/scgi; keepalive_requests 1000000;
              server { \(listen) location / { return 201; } }
            }
            """
        try config.write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: try ChildProcess.which("nginx"))
        process.arguments = ["-p", d, "-c", directory.appendingPathComponent("nginx.conf").path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Ready when the port accepts connections.
        let deadline = ContinuousClock.now + .seconds(10)
        while !canConnect(port: port) {
            guard process.isRunning, ContinuousClock.now < deadline else {
                stop()
                throw ServerProcess.StartFailed(
                    command: "nginx",
                    stderr: (try? String(contentsOfFile: "\(d)/error.log", encoding: .utf8)) ?? ""
                )
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Stops nginx, then reads its access log: each request's protocol and status (`HTTP/1.1 201`).
    /// Read after the stop, the log holds every request answered: a worker writes a request's line
    /// after sending its answer, so a client can hold the answer before the line is written.
    public func stopAndReadAccessLog() throws -> [Substring] {
        if process.isRunning {
            process.terminate()
            process.reap()
        }
        defer { stop() }
        return try String(contentsOf: directory.appendingPathComponent("access.log"), encoding: .utf8)
            .split(separator: "\n")
    }

    public var url: String { "\(certificate == nil ? "http" : "https")://127.0.0.1:\(port)/" }

    public func stop() {
        if process.isRunning {
            process.terminate()
            process.reap()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

#if canImport(Glibc)
import Glibc
#endif

/// True when something accepts TCP connections on 127.0.0.1:port.
public func canConnect(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}
