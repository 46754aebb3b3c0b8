import TextFormats

/// A Notification Hubs connection string; its `description` never shows the key.
public struct ConnectionString: Sendable, CustomStringConvertible {
    /// The namespace endpoint as given, e.g. `sb://newsroom.servicebus.windows.net/`.
    public let endpoint: String
    public let keyName: String
    let key: String
    /// `UseDevelopmentEmulator=true`: plain http to the endpoint's host and port.
    public let useDevelopmentEmulator: Bool
    /// `https://<host>/` (or `http://<host:port>/` for the emulator), ending in `/`.
    public let baseURL: String

    /// Why a connection string was refused; never contains the key.
    public struct ParseError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public init(parsing text: String) throws(ParseError) {
        var parts: [String: String] = [:]
        for piece in text.split(separator: ";") {
            let trimmed = piece.trimmingWhitespace()
            if trimmed.isEmpty { continue }
            guard let eq = trimmed.firstIndex(of: "=") else {
                // Only the first characters: a part without '=' may be a mangled key.
                let name = trimmed.prefix(while: { $0 != " " }).prefix(40)
                throw ParseError(
                    description: "connection string part \(LegibleText.quoted(name)) has no '=' (expected Name=value)"
                )
            }
            let name = trimmed[..<eq].trimmingWhitespace().lowercased()
            parts[name] = String(trimmed[trimmed.index(after: eq)...]).trimmingWhitespace()
        }
        func required(_ name: String) throws(ParseError) -> String {
            guard let value = parts[name.lowercased()], !value.isEmpty else {
                throw ParseError(
                    description:
                        "connection string has no \(name) part (expected Endpoint=sb://<namespace>.servicebus.windows.net/;SharedAccessKeyName=…;SharedAccessKey=…)"
                )
            }
            return value
        }
        let endpoint = try required("Endpoint")
        keyName = try required("SharedAccessKeyName")
        key = try required("SharedAccessKey")
        useDevelopmentEmulator = try Self.flag(parts, "UseDevelopmentEmulator")
        guard let schemeEnd = endpoint.range(of: "://") else {
            throw ParseError(
                description:
                    "Endpoint \(LegibleText.quoted(endpoint)) has no scheme (expected sb://<namespace>.servicebus.windows.net/)"
            )
        }
        let scheme = endpoint[..<schemeEnd.lowerBound].lowercased()
        guard ["sb", "https", "http"].contains(scheme) else {
            throw ParseError(description: "Endpoint \(LegibleText.quoted(endpoint)) must start with sb://")
        }
        let host = endpoint[schemeEnd.upperBound...].split(separator: "/", maxSplits: 1).first.map(String.init) ?? ""
        guard !host.isEmpty, host.allSatisfy({ $0.isLetter || $0.isNumber || "-.:[]".contains($0) }) else {
            throw ParseError(description: "Endpoint \(LegibleText.quoted(endpoint)) has no valid host name")
        }
        if scheme == "http" && !useDevelopmentEmulator {
            throw ParseError(
                description:
                    "Endpoint \(LegibleText.quoted(endpoint)) is plain http; only UseDevelopmentEmulator=true allows that"
            )
        }
        self.endpoint = endpoint
        baseURL = (useDevelopmentEmulator ? "http://" : "https://") + host + "/"
    }

    /// A true/false part, absent meaning false; anything else is refused rather than read as false,
    /// so a typo cannot silently switch a deployment from the emulator to a real hub or back.
    private static func flag(_ parts: [String: String], _ name: String) throws(ParseError) -> Bool {
        guard let value = parts[name.lowercased()] else { return false }
        switch value.lowercased() {
        case "true": return true
        case "false": return false
        default:
            throw ParseError(
                description:
                    "connection string part \(name) must be true or false, got \(LegibleText.quoted(value.prefix(40)))"
            )
        }
    }

    public var description: String {
        "Endpoint=\(endpoint);SharedAccessKeyName=\(keyName);SharedAccessKey=<redacted>"
            + (useDevelopmentEmulator ? ";UseDevelopmentEmulator=true" : "")
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}
