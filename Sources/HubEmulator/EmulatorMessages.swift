import Foundation
import NotificationHubs

/// An HTTP request as the emulator sees it, independent of the server library.
public struct EmulatorRequest: Sendable {
    public var method: String
    public var path: String
    public var query: String {
        didSet { queryItems = Self.parse(query) }
    }
    private var queryItems: [(Substring, Substring?)]
    /// Lowercased names.
    public var headers: [String: String]
    public var body: [UInt8]
    /// `host:port` the client addressed: part of the SAS resource.
    public var host: String

    public init(
        method: String,
        path: String,
        query: String = "",
        headers: [String: String] = [:],
        body: [UInt8] = [],
        host: String
    ) {
        self.method = method
        self.path = path
        self.query = query
        queryItems = Self.parse(query)
        // Lowercase only when needed: the server already hands over lowercased names.
        self.headers =
            headers.keys.allSatisfy({ $0 == $0.lowercased() })
            ? headers : Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        self.body = body
        self.host = host
    }

    func header(_ name: String) -> String? { headers[name] }

    /// `?direct`, `?test` and `?api-version=…` style flags and values.
    func queryValue(_ name: String) -> String? {
        for (key, value) in queryItems where key == name { return value.map(String.init) ?? "" }
        return nil
    }

    private static func parse(_ query: String) -> [(Substring, Substring?)] {
        query.split(separator: "&").map { pair in
            guard let eq = pair.firstIndex(of: "=") else { return (pair, nil) }
            return (pair[..<eq], pair[pair.index(after: eq)...])
        }
    }
}

/// What the emulator answers.
public struct EmulatorResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// Injected delay before answering.
    public var latencyMs = 0
    /// Injected: close the connection instead of answering.
    public var drop = false

    init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// NH's XML error body.
    static func error(_ status: Int, _ detail: String, retryAfter: Int? = nil) -> EmulatorResponse {
        let body =
            "<Error><Code>\(status)</Code><Detail>\(XMLText.escape(detail)) TrackingId:emulator,TimeStamp:\(Date())</Detail></Error>"
        var headers = [("Content-Type", "application/xml; charset=utf-8")]
        if let retryAfter { headers.append(("Retry-After", String(retryAfter))) }
        return EmulatorResponse(status: status, headers: headers, body: Array(body.utf8))
    }

    static func json(_ status: Int, _ body: [UInt8]) -> EmulatorResponse {
        EmulatorResponse(status: status, headers: [("Content-Type", "application/json")], body: body)
    }
}
