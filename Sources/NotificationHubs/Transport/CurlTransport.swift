import CCurl
import Foundation
import Logging
import Synchronization

/// HTTP over libcurl's multi interface: a few multi handles, each driven by its own thread,
/// shared by every sender round-robin. Connections are kept alive and reused, HTTP/2 is used where
/// the server offers it.
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
        let transfer = Transfer(request: request)
        let loop = nextLoop()
        let result = await withTaskCancellationHandler {
            // Unsafe, not checked: the completion runs exactly once, and the checked kind
            // allocates a canary object per send.
            await withUnsafeContinuation { continuation in
                transfer.completion = { continuation.resume(returning: $0) }
                loop.submit(transfer)
            }
        } onCancel: {
            loop.cancel(transfer)
        }
        return try result.get()
    }

    public func start(
        _ request: HTTPRequest,
        completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void
    ) {
        let transfer = Transfer(request: request)
        transfer.completion = completion
        nextLoop().submit(transfer)
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

/// One request on its way through the loop.
///
/// Unchecked: its mutable fields are set by the submitter before `submit` (whose inbox lock hands
/// them over) and touched afterwards only by the loop thread, which runs the completion once, in
/// `finish`; `cancelRequested` is atomic for the cancelling task. Exercised by `ClientTests`.
final class Transfer: @unchecked Sendable {
    let request: HTTPRequest
    var completion: (@Sendable (Result<HTTPResponse, TransportError>) -> Void)?
    var easy: UnsafeMutableRawPointer?
    /// The loop's cached list of this request's headers, released when the transfer completes.
    var headerList: HeaderListCache.List?
    var body: UnsafeMutableRawBufferPointer?
    var responseBody: [UInt8] = []
    var responseHeaders: [HTTPHeader] = []
    var started: ContinuousClock.Instant = .now
    let cancelRequested = Atomic<Bool>(false)
    /// Lower-case names of the response headers to keep; nil: all.
    var keptHeaders: [[UInt8]]?

    /// True if the header called `name` (any case) is kept.
    func keeps(_ name: UnsafeRawBufferPointer) -> Bool {
        guard let keptHeaders else { return true }
        return keptHeaders.contains { kept in
            kept.count == name.count
                && zip(kept, name).allSatisfy { k, b in k == (b >= 0x41 && b <= 0x5A ? b + 0x20 : b) }
        }
    }

    init(request: HTTPRequest) { self.request = request }

    /// Tells the sender exactly once and frees the body copy libcurl was pointed at.
    func finish(_ result: Result<HTTPResponse, TransportError>) {
        body?.deallocate()
        body = nil
        let completion = self.completion
        self.completion = nil
        completion?(result)
    }
}
