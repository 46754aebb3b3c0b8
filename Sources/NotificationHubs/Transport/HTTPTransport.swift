/// Sends one HTTP request and returns the whole response. The client sees only this: libcurl is
/// behind it in the product (`CurlTransport`), and a function in tests and benchmarks
/// (`InMemoryTransport`), so the send path can be driven and measured without sockets.
public protocol HTTPTransport: Sendable {
    /// Performs one request; cancelling the calling task aborts it.
    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse

    /// Starts one request and returns at once; `completion` runs exactly once, on a thread of the
    /// transport's (it must not block). The send path's way in: no task and no continuation per
    /// request, where `send` needs both.
    func start(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void)

    /// Ends every request started and not yet answered as `cancelled`.
    func cancelAll()
}

/// Answers every request from a function, on the calling task: no socket, no thread.
public struct InMemoryTransport: HTTPTransport {
    private let answer: @Sendable (HTTPRequest) throws(TransportError) -> HTTPResponse

    public init(_ answer: @escaping @Sendable (HTTPRequest) throws(TransportError) -> HTTPResponse) {
        self.answer = answer
    }

    /// Every request answered with `status` and these headers, an empty body.
    public init(status: Int, headers: [HTTPHeader] = []) {
        let response = HTTPResponse(status: status, headers: headers, body: [], elapsed: .zero)
        answer = { _ in response }
    }

    public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        try answer(request)
    }

    /// Answers before it returns: nothing is ever in flight.
    public func start(
        _ request: HTTPRequest,
        completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void
    ) {
        completion(Result { () throws(TransportError) in try answer(request) })
    }

    public func cancelAll() {}
}
