import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP port that was free a moment ago, below the kernel's ephemeral range.
///
/// The kernel's own choice (port 0) comes from the ephemeral range, which every outgoing
/// connection of every parallel test also draws from: with the whole suite running, a port chosen
/// there was sometimes taken before the server under test bound it (or after a test killed it),
/// and the test talked to someone else's socket. Below that range only servers bind.
public func freeLoopbackPort() -> Int {
    let low = ephemeralRangeStart()
    if low > 11_000 {
        for _ in 0..<1000 {
            let candidate = Int.random(in: (low - 10_000)..<low)
            if bindLoopback(candidate) != nil { return candidate }
        }
    }
    return bindLoopback(0) ?? 0
}

/// The first port of `net.ipv4.ip_local_port_range` (Linux's default 32768 if unreadable).
private func ephemeralRangeStart() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8),
        let first = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first,
        let low = Int(first)
    else { return 32_768 }
    return low
}

/// Binds 127.0.0.1:`port` for a moment; the port bound, or nil if it was taken.
private func bindLoopback(_ port: Int) -> Int? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    guard bound == 0 else { return nil }
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}
