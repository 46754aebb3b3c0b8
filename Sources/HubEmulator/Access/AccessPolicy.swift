import Foundation
import NotificationHubs
import Synchronization

/// The emulator's shared access keys and the rights each grants, checked as NH checks them.
public struct AccessPolicy: Sendable {
    /// What a key may do.
    public struct Rights: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let listen = Rights(rawValue: 1)
        public static let send = Rights(rawValue: 2)
        public static let manage = Rights(rawValue: 4)
    }

    /// A named key.
    public struct Key: Sendable {
        public let name: String
        public let secret: String
        public let rights: Rights
    }

    public let keys: [Key]
    /// Tokens whose signature was already checked: clients reuse one token for many requests,
    /// so the HMAC and the parsing run once per token, not once per request.
    private let verified = VerifiedTokens()

    /// NH's default policies (full and listen) plus a send-only one, with fresh random secrets.
    public static func generated() -> AccessPolicy {
        func secret() -> String { Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString() }
        return AccessPolicy(keys: [
            Key(name: "DefaultFullSharedAccessSignature", secret: secret(), rights: [.listen, .send, .manage]),
            Key(name: "DefaultListenSharedAccessSignature", secret: secret(), rights: [.listen]),
            Key(name: "DefaultSendSharedAccessSignature", secret: secret(), rights: [.send]),
        ])
    }

    public init(keys: [Key]) { self.keys = keys }

    /// The connection string a client uses for `keyName`, pointing at `host:port` as an emulator.
    public func connectionString(keyName: String, host: String, port: Int) -> String? {
        guard let key = keys.first(where: { $0.name == keyName }) else { return nil }
        return
            "Endpoint=sb://\(host):\(port)/;SharedAccessKeyName=\(key.name);SharedAccessKey=\(key.secret);UseDevelopmentEmulator=true"
    }

    /// Why a request was refused; NH answers all of these with 401.
    public struct Denied: Error, Sendable {
        public let detail: String
    }

    /// Checks an `Authorization` header for `resource` (e.g. `http://127.0.0.1:8089/hub`).
    public func authorize(_ header: String?, resource: String, needs right: Rights, now: Double) throws(Denied) {
        guard let header, !header.isEmpty else {
            throw Denied(detail: "MissingToken: the Authorization header is missing")
        }
        let token: VerifiedTokens.Token
        if let known = verified.lookup(header) {
            token = known
        } else {
            guard let fields = SASToken.parse(header) else {
                throw Denied(detail: "InvalidToken: the Authorization header is not a SharedAccessSignature")
            }
            guard let key = keys.first(where: { $0.name == fields.keyName }) else {
                throw Denied(detail: "InvalidToken: unknown key name \(fields.keyName)")
            }
            guard fields.isSigned(by: key.secret) else {
                throw Denied(detail: "InvalidSignature: the token's signature does not match")
            }
            token = .init(
                keyName: key.name,
                rights: key.rights,
                expiry: fields.expiry,
                scope: PercentEncoding.decode(fields.resource)?.lowercased() ?? ""
            )
            verified.remember(header, token)
        }
        guard Double(token.expiry) > now else {
            throw Denied(detail: "ExpiredToken: the token expired at \(token.expiry)")
        }
        let scope = token.scope
        let target = resource.lowercased()
        guard !scope.isEmpty, target == scope || target.hasPrefix(scope.hasSuffix("/") ? scope : scope + "/") else {
            throw Denied(detail: "InvalidAudience: the token is for \(scope), not \(target)")
        }
        guard token.rights.contains(right) else {
            throw Denied(
                detail: "UnauthorizedAccess: the \(token.keyName) policy lacks the \(Self.name(of: right)) right"
            )
        }
    }

    private static func name(of right: Rights) -> String {
        right == .send ? "Send" : right == .manage ? "Manage" : "Listen"
    }
}

/// Signature-checked tokens by header text, bounded.
final class VerifiedTokens: Sendable {
    struct Token: Sendable {
        let keyName: String
        let rights: AccessPolicy.Rights
        let expiry: Int64
        let scope: String
    }

    private static let capacity = 1024
    private let tokens = Mutex<[String: Token]>([:])

    func lookup(_ header: String) -> Token? { tokens.withLock { $0[header] } }

    func remember(_ header: String, _ token: Token) {
        tokens.withLock { tokens in
            if tokens.count >= Self.capacity { tokens.removeAll(keepingCapacity: true) }
            tokens[header] = token
        }
    }
}
