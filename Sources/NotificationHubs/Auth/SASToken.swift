import Foundation

/// A Shared Access Signature, built exactly as Microsoft's REST sample builds it.
public struct SASToken: Sendable, Equatable {
    /// The full `Authorization` header value.
    public let header: String
    /// Seconds since the epoch at which the service stops accepting it.
    public let expiry: Int64

    /// `resourceURI` is e.g. `https://ns.servicebus.windows.net/hub`; it is encoded, then lowercased.
    public init(resourceURI: String, keyName: String, key: String, expiry: Int64) {
        let encodedURI = PercentEncoding.encode(resourceURI).lowercased()
        let signature = HMAC.sha256(key: Array(key.utf8), message: Array("\(encodedURI)\n\(expiry)".utf8))
        let encodedSignature = PercentEncoding.encode(Data(signature).base64EncodedString())
        header = "SharedAccessSignature sr=\(encodedURI)&sig=\(encodedSignature)&se=\(expiry)&skn=\(keyName)"
        self.expiry = expiry
    }

    /// The fields of a token header, for a verifier (the emulator).
    public struct Fields: Sendable, Equatable {
        public let resource: String
        public let signature: String
        public let expiry: Int64
        public let keyName: String

        /// True when `key` signed this token.
        public func isSigned(by key: String) -> Bool {
            let expected = HMAC.sha256(key: Array(key.utf8), message: Array("\(resource)\n\(expiry)".utf8))
            guard let decoded = PercentEncoding.decode(signature), let given = Data(base64Encoded: decoded) else {
                return false
            }
            return constantTimeEqual(Array(given), expected)
        }
    }

    /// Parses `SharedAccessSignature sr=…&sig=…&se=…&skn=…` in any field order.
    public static func parse(_ header: String) -> Fields? {
        let prefix = "SharedAccessSignature "
        guard header.hasPrefix(prefix) else { return nil }
        var fields: [Substring: Substring] = [:]
        for pair in header.dropFirst(prefix.count).split(separator: "&") {
            guard let eq = pair.firstIndex(of: "=") else { return nil }
            fields[pair[..<eq]] = pair[pair.index(after: eq)...]
        }
        guard let sr = fields["sr"], let sig = fields["sig"], let se = fields["se"].flatMap({ Int64($0) }),
            let skn = fields["skn"]
        else { return nil }
        return Fields(resource: String(sr), signature: String(sig), expiry: se, keyName: String(skn))
    }

    private static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in a.indices { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}
