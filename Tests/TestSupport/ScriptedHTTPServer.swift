import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 server on 127.0.0.1 for client tests: keep-alive, every request recorded,
/// each answer chosen by a script. It speaks just enough HTTP for libcurl.
public final class ScriptedHTTPServer: @unchecked Sendable {
    /// A request as it arrived.
    public struct Request: Sendable {
        public let connection: Int
        public let requestLine: String
        /// Header names as sent, in order.
        public let headers: [(name: String, value: String)]
        public let body: [UInt8]

        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// What to answer.
    public struct Response: Sendable {
        public var status: Int
        public var headers: [(String, String)]
        public var body: String
        public var delay: Duration = .zero
        /// Close the connection without answering.
        public var drop = false

        public init(
            status: Int,
            headers: [(String, String)] = [],
            body: String = "",
            delay: Duration = .zero,
            drop: Bool = false
        ) {
            self.status = status
            self.headers = headers
            self.body = body
            self.delay = delay
            self.drop = drop
        }
    }

    public let port: Int
    private let listener: Int32
    private let script: @Sendable (Request, Int) -> Response
    // NSLock, not Mutex: the thread sanitizer does not see a contended Synchronization.Mutex.
    private let recordedLock = NSLock()
    private var recorded: [Request] = []
    private let connectionCount = Atomic<Int>(0)
    private let running = Atomic<Bool>(true)

    /// `script` gets each request and its 0-based index among all requests.
    public init(script: @escaping @Sendable (Request, Int) -> Response) throws {
        self.script = script
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok, listen(fd, 512) == 0 else { throw POSIXError(.EADDRINUSE) }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    public var baseURL: String { "http://127.0.0.1:\(port)/" }
    public var requests: [Request] { recordedLock.withLock { recorded } }
    public var connections: Int { connectionCount.load(ordering: .relaxed) }

    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while running.load(ordering: .acquiring) {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            let id = connectionCount.add(1, ordering: .relaxed).newValue
            let thread = Thread { [self] in serve(client, connection: id) }
            thread.start()
        }
    }

    private func serve(_ fd: Int32, connection: Int) {
        defer { close(fd) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            // Read the head.
            var headEnd: Int?
            while headEnd == nil {
                if let r = find(buffer, Array("\r\n\r\n".utf8)) {
                    headEnd = r
                    break
                }
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard n > 0 else { return }
                buffer += chunk[0..<n]
            }
            guard let end = headEnd else { return }
            let head = String(decoding: buffer[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
            buffer.removeFirst(end + 4)
            let headers = head.dropFirst().compactMap { line -> (String, String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            let length = Int(headers.first { $0.0.lowercased() == "content-length" }?.1 ?? "0") ?? 0
            while buffer.count < length {
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard n > 0 else { return }
                buffer += chunk[0..<n]
            }
            let request = Request(
                connection: connection,
                requestLine: head.first ?? "",
                headers: headers.map { (name: $0.0, value: $0.1) },
                body: Array(buffer[0..<length])
            )
            buffer.removeFirst(length)
            let index = recordedLock.withLock {
                recorded.append(request)
                return recorded.count - 1
            }
            let response = script(request, index)
            // The scripted latency (a slow hub), on this connection's own thread: the answer waits
            // for it unless the client hangs up first (a cancelled transfer), which ends the
            // connection at once rather than after the delay.
            if response.delay > .zero, Self.hungUp(fd, within: response.delay) { return }
            if response.drop { return }
            var text = "HTTP/1.1 \(response.status) Status\r\nContent-Length: \(response.body.utf8.count)\r\n"
            for (name, value) in response.headers { text += "\(name): \(value)\r\n" }
            text += "\r\n" + response.body
            let bytes = Array(text.utf8)
            var sent = 0
            while sent < bytes.count {
                let w = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + sent, bytes.count - sent) }
                guard w > 0 else { return }
                sent += w
            }
        }
    }

    /// Waits up to `delay` for the peer to close its end; true if it did. Linux's POLLRDHUP
    /// (0x2000; Glibc's module does not export the name) reports exactly that, and no data.
    private static func hungUp(_ fd: Int32, within delay: Duration) -> Bool {
        let (seconds, attoseconds) = delay.components
        let ms = min(Int64(Int32.max), seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
        var descriptor = pollfd(fd: fd, events: 0x2000, revents: 0)
        var result: Int32
        repeat { result = poll(&descriptor, 1, Int32(ms)) } while result == -1 && errno == EINTR
        return result > 0
    }

    private func find(_ haystack: [UInt8], _ needle: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count)
        where haystack[i] == needle[0] && Array(haystack[i..<i + needle.count]) == needle {
            return i
        }
        return nil
    }
}
