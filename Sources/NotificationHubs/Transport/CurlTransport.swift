import CCurl
import Foundation
import Logging
import Synchronization

/// HTTP over libcurl's multi interface: a few multi handles, each driven by its own thread,
/// shared by every sender round-robin. Connections are kept alive and reused; HTTP/1.1 even where
/// the server offers HTTP/2 (the reason is where the handle's options are set).
public final class CurlTransport: HTTPTransport {
    private let loops: [CurlEventLoop]
    private let next = Atomic<UInt>(0)

    public init(configuration: TransportConfiguration = TransportConfiguration(), logger: Logger) {
        if configuration.insecure {
            logger.warning("TLS certificate verification is OFF (--insecure): use only against a test server")
        }
        let count = max(1, configuration.eventLoops)
        var share = configuration
        share.maxConnectionsPerHost = max(1, (configuration.maxConnectionsPerHost + count - 1) / count)
        loops = (0..<count).map { _ in CurlEventLoop(configuration: share, logger: logger) }
    }

    deinit { shutdown() }

    /// Performs one request; cancelling the calling task aborts the transfer.
    public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        let cancel = CancelRequest()
        let loop = nextLoop()
        let result = await withTaskCancellationHandler {
            // Unsafe, not checked: the completion runs exactly once, and the checked kind
            // allocates a canary object per send.
            await withUnsafeContinuation { continuation in
                loop.submit(Submission(request: request, cancel: cancel) { continuation.resume(returning: $0) })
            }
        } onCancel: {
            loop.cancel(cancel)
        }
        return try result.get()
    }

    public func start(
        _ request: HTTPRequest,
        completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void
    ) {
        nextLoop().submit(Submission(request: request, cancel: nil, completion: completion))
    }

    public func cancelAll() { for loop in loops { loop.cancelAll() } }

    private func nextLoop() -> CurlEventLoop {
        loops[Int(next.add(1, ordering: .relaxed).oldValue % UInt(loops.count))]
    }

    /// Connections opened so far (for tests and metrics: keep-alive shows as a small number).
    public var connectionsOpened: Int { loops.reduce(0) { $0 + $1.connectionsOpened } }

    /// Fails what is in flight and stops the threads.
    public func shutdown() { for loop in loops { loop.stop() } }
}

/// One request handed to a loop: all another thread gives it. The loop thread alone builds the
/// transfer from it.
///
/// A reference: it is queued, taken from the queue and kept by its transfer, and as a struct each
/// of those copies retained its URL, headers, body and completion (about fifteen retains a send).
final class Submission: Sendable {
    let request: HTTPRequest
    /// Set for a request its caller may cancel.
    let cancel: CancelRequest?
    let completion: @Sendable (Result<HTTPResponse, TransportError>) -> Void

    init(
        request: HTTPRequest,
        cancel: CancelRequest?,
        completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void
    ) {
        self.request = request
        self.cancel = cancel
        self.completion = completion
    }
}

/// A caller's wish to cancel its request, which may come before the loop has started it: the loop
/// checks the flag when it starts the request, and finds the transfer by this object after.
final class CancelRequest: Sendable {
    let requested = Atomic<Bool>(false)
}
