import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Forwards TCP connections from a fixed loopback port to the mock cluster's own (random) port.
///
/// librdkafka's mock brokers choose their ports; this gives `dev-broker --port` a stable
/// bootstrap address. After bootstrap, clients connect to the brokers' advertised addresses.
public final class TCPRelay: Sendable {
    private let listener: Int32
    private let stopped = Shared(false)

    public init(listenPort: UInt16, target: String, logger: Logger) throws(KafkaError) {
        let first = target.split(separator: ",").first.map(String.init) ?? target
        guard let colon = first.lastIndex(of: ":"), let targetPort = UInt16(first[first.index(after: colon)...]) else {
            throw .configuration("relay target \(target) is not host:port")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw .configuration("socket(): \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: listenPort)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .configuration("cannot listen on 127.0.0.1:\(listenPort): \(reason)")
        }
        listener = fd
        let thread = Thread { [stopped] in
            while !stopped.withLock({ $0 }) {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { continue }
                let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var target = Self.loopback(port: targetPort)
                let connected = withUnsafePointer(to: &target) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                guard connected == 0 else {
                    logger.warning("Relay could not reach the broker", metadata: ["port": "\(targetPort)"])
                    close(client)
                    close(upstream)
                    continue
                }
                let pump = Thread { Self.pump(client, upstream) }
                pump.name = "hubcast-relay-connection"
                pump.start()
            }
        }
        thread.name = "hubcast-relay-accept"
        thread.start()
    }

    /// Stops accepting; open connections end when either side closes.
    public func stop() {
        guard
            !stopped.withLock({ stopped in
                defer { stopped = true }
                return stopped
            })
        else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    // Copies bytes both ways until one side closes.
    private static func pump(_ a: Int32, _ b: Int32) {
        defer {
            close(a)
            close(b)
        }
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while poll(&fds, 2, -1) > 0 {
            for i in 0..<2 where fds[i].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(fds[i].fd, $0.baseAddress, $0.count) }
                guard n > 0 else { return }
                var sent = 0
                while sent < n {
                    let w = buffer.withUnsafeBytes { write(fds[1 - i].fd, $0.baseAddress! + sent, n - sent) }
                    guard w > 0 else { return }
                    sent += w
                }
            }
        }
    }
}
