import Hummingbird
import NIOCore

/// Hummingbird's context plus the peer's address: failed logins are counted per address, and Basic
/// over plain http is accepted from loopback (when it relays no one: `BackendAPI.authenticate`).
public struct BackendRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The address without the port, for counting.
    var clientAddress: String { remoteAddress?.ipAddress ?? "unknown" }

    var isLoopback: Bool {
        guard let ip = remoteAddress?.ipAddress else { return false }
        return ip.hasPrefix("127.") || ip == "::1" || ip.hasPrefix("::ffff:127.")
    }
}
