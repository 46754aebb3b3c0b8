#if canImport(Glibc)
import Glibc
#endif

/// The proxies in front of the backend (`--trusted-proxies`): from their addresses only,
/// `X-Forwarded-For` names the client (for the per-address login lockout) and
/// `X-Forwarded-Proto: https` says the client's connection was TLS (for Basic). From anyone else
/// both headers are ignored: a client could write them.
public struct TrustedProxies: Sendable, Equatable {
    /// A network: its address bytes (4 or 16) and prefix length.
    struct Network: Sendable, Equatable {
        let bytes: [UInt8]
        let prefix: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == bytes.count else { return false }
            var bits = prefix
            for (a, b) in zip(address, bytes) where bits > 0 {
                let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
                if a & mask != b & mask { return false }
                bits -= 8
            }
            return true
        }
    }

    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    let networks: [Network]

    public init() { networks = [] }

    /// `list`: CIDRs or single addresses, IPv4 or IPv6, comma-separated (`10.0.0.0/8,fd00::/8`).
    public init(parsing list: String) throws(Invalid) {
        var networks: [Network] = []
        for entry in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            let parts = entry.split(separator: "/", maxSplits: 1).map(String.init)
            guard let bytes = Self.addressBytes(parts[0]) else {
                throw Invalid(description: "\(entry) is not an IP address or network")
            }
            let prefix = parts.count == 2 ? Int(parts[1]) : bytes.count * 8
            guard let prefix, (0...(bytes.count * 8)).contains(prefix) else {
                throw Invalid(description: "\(entry): the prefix length must be 0 to \(bytes.count * 8)")
            }
            networks.append(Network(bytes: bytes, prefix: prefix))
        }
        self.networks = networks
    }

    public var isEmpty: Bool { networks.isEmpty }

    public func contains(_ address: String) -> Bool {
        guard let bytes = Self.addressBytes(address) else { return false }
        return networks.contains { $0.contains(bytes) }
    }

    /// Who the client is and whether its connection was TLS, given the peer that connected and the
    /// request's forwarding headers. `X-Forwarded-For` is read from the right: the first address
    /// that is not a trusted proxy is the client (the ones left of it could be the client's own
    /// words). Hops may carry a port (`203.0.113.9:4711`, `[2001:db8::1]:443`, as some load
    /// balancers write them). When every hop is a trusted proxy, the nearest one (the rightmost)
    /// is the client: never an address further left, which the client could have written. An
    /// address that cannot be read leaves the peer as the client.
    public func origin(peer: String, forwardedFor: [String], forwardedProto: [String]) -> (address: String, tls: Bool) {
        guard contains(peer) else { return (peer, false) }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map {
            Self.host(of: $0.trimmingCharacters(in: .whitespaces))
        }
        .filter { !$0.isEmpty }
        let client = hops.reversed().first { !contains($0) } ?? hops.last ?? peer
        // The nearest proxy's word on the scheme: the last value of the last header.
        let scheme = forwardedProto.flatMap { $0.split(separator: ",") }.last?.trimmingCharacters(in: .whitespaces)
            .lowercased()
        return (Self.addressBytes(client).map(Self.canonical) ?? peer, scheme == "https")
    }

    /// A hop without its port: `[v6]:port` → `v6`, `v4:port` → `v4`; anything else as it is.
    static func host(of hop: String) -> String {
        if hop.hasPrefix("["), let close = hop.firstIndex(of: "]") {
            return String(hop[hop.index(after: hop.startIndex)..<close])
        }
        let colons = hop.filter { $0 == ":" }.count
        if colons == 1, let colon = hop.firstIndex(of: ":") { return String(hop[..<colon]) }
        return hop
    }

    /// One spelling per address, so that `::ffff:10.1.1.1` and `10.1.1.1` are one lockout key.
    static func canonical(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// 4 bytes for IPv4 (an IPv4-mapped IPv6 address too), 16 for IPv6; nil if it is neither.
    static func addressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }
}
