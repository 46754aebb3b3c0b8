/// An HTTP header; response header names are lowercased.
public struct HTTPHeader: Sendable, Hashable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// One request for the transport.
public struct HTTPRequest: Sendable {
    public enum Method: String, Sendable {
        case get = "GET", post = "POST", put = "PUT", patch = "PATCH", delete = "DELETE"
    }

    public var method: Method
    public var url: String
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// The whole transfer, connection included.
    public var timeout: Duration

    public init(
        method: Method,
        url: String,
        headers: [HTTPHeader] = [],
        body: [UInt8] = [],
        timeout: Duration = .seconds(30)
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// A complete response.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    public var elapsed: Duration

    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = [], elapsed: Duration = .zero) {
        self.status = status
        self.headers = headers
        self.body = body
        self.elapsed = elapsed
    }

    /// The first header with this (case-insensitive) name.
    public func header(_ name: String) -> String? {
        header(lowercased: name.lowercased())
    }

    /// The first header called `name`, already lower-case (as response header names are): no
    /// lower-cased copy of the name per look-up on the send path.
    public func header(lowercased name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// The request did not get a response: timeout, cancellation, TLS, connection or other failure.
public struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Kind: Sendable, Hashable {
        let name: String
        public static let timeout = Kind(name: "timeout")
        public static let cancelled = Kind(name: "cancelled")
        public static let tls = Kind(name: "tls")
        public static let connection = Kind(name: "connection")
        public static let shutDown = Kind(name: "shut-down")
        public static let other = Kind(name: "other")
    }

    public let kind: Kind
    /// libcurl's CURLcode, 0 when the error is hubcast's own.
    public let code: Int32
    public let message: String

    public var description: String { "\(kind.name): \(message)" }

    init(kind: Kind, code: Int32, message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    /// An error of hubcast's own (no libcurl code): what another transport reports.
    public init(_ kind: Kind, message: String) {
        self.init(kind: kind, code: 0, message: message)
    }
}

/// TLS and pool settings of the transport.
public struct TransportConfiguration: Sendable {
    /// CA bundle to verify servers with, instead of the system's.
    public var caFile: String?
    /// Skip certificate verification: for a self-signed test server only; logged loudly.
    public var insecure = false
    /// Connections kept open per host, each carrying one request at a time (HTTP/1.1).
    public var maxConnectionsPerHost = 64
    public var connectTimeout: Duration = .seconds(10)
    /// Threads driving libcurl, each with its own multi handle and share of the connections. One
    /// spends ~10% less CPU per request than two (more completions per wake-up) and sends ~26,000/s
    /// into nginx on 2 cores; two reach ~29,000/s, where Kafka delivers that much (benchmarks/README).
    public var eventLoops = 1
    /// Response headers kept (lower-case names); nil keeps every one. A sender that reads three
    /// headers need not allocate two strings for each of the others on every response.
    public var keptResponseHeaders: Set<String>?

    public init(caFile: String? = nil, insecure: Bool = false) {
        self.caFile = caFile
        self.insecure = insecure
    }
}
