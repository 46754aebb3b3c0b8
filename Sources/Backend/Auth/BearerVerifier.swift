import Foundation
import JWTKit

/// Bearer JWTs from an identity provider (seed 003 says to replace its scheme with OAuth or Active
/// Directory tokens): signature by a key from an HS256 secret file or a JWKS file, then issuer,
/// audience, expiry and not-before. The user is `sub`; roles come from the `roles` claim.
public struct BearerVerifier: Sendable {
    public struct Configuration: Sendable {
        public var issuer: String
        public var audience: String
        /// Seconds of clock skew allowed on `exp` and `nbf`.
        public var leeway: Double = 30
        public init(issuer: String, audience: String) {
            self.issuer = issuer
            self.audience = audience
        }
    }

    public enum Keys: Sendable {
        case hs256(secret: [UInt8])
        case jwks(json: String)
    }

    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    let keys: JWTKeyCollection
    let configuration: Configuration
    /// The algorithms a token may name: never `none`, and never HS* when the keys are public ones
    /// (the classic confusion of an RSA public key used as an HMAC secret).
    let algorithms: Set<String>

    public static func make(keys source: Keys, configuration: Configuration) async throws(Invalid) -> BearerVerifier {
        let keys = JWTKeyCollection()
        let algorithms: Set<String>
        switch source {
        case .hs256(let secret):
            guard secret.count >= 32 else { throw Invalid(description: "the HS256 secret must be at least 32 bytes") }
            await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
            algorithms = ["HS256"]
        case .jwks(let json):
            do {
                try await keys.add(jwksJSON: json)
            } catch {
                throw Invalid(description: "the JWKS file is not a key set jwt-kit accepts")
            }
            algorithms = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
        }
        return BearerVerifier(keys: keys, configuration: configuration, algorithms: algorithms)
    }

    /// The caller the token names, or `Invalid` with a reason safe to log (never the token).
    public func verify(_ token: String, now: Date = Date()) async throws(Invalid) -> Principal {
        guard let alg = Self.headerAlgorithm(token), algorithms.contains(alg) else {
            throw Invalid(description: "token algorithm not accepted")
        }
        let claims: Claims
        do {
            claims = try await keys.verify(token, as: Claims.self)
        } catch {
            throw Invalid(description: "token signature or claims invalid")
        }
        guard claims.iss?.value == configuration.issuer else { throw Invalid(description: "token issuer not accepted") }
        guard let aud = claims.aud, aud.value.contains(configuration.audience) else {
            throw Invalid(description: "token audience not accepted")
        }
        guard let exp = claims.exp else { throw Invalid(description: "token has no expiry") }
        guard exp.value.timeIntervalSince(now) > -configuration.leeway else {
            throw Invalid(description: "token expired")
        }
        if let nbf = claims.nbf, nbf.value.timeIntervalSince(now) > configuration.leeway {
            throw Invalid(description: "token not yet valid")
        }
        guard let sub = claims.sub?.value, UserName.isValid(sub) else {
            throw Invalid(description: "token subject is not a valid user name")
        }
        return Principal(name: sub, roles: Set(claims.roles ?? []))
    }

    /// The `alg` of the token's header, read before any key is chosen.
    static func headerAlgorithm(_ token: String) -> String? {
        guard let header = token.split(separator: ".", omittingEmptySubsequences: false).first,
            header.utf8.count <= 4096
        else { return nil }
        var base64 = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object["alg"] as? String
    }

    /// The claims the backend reads; jwt-kit checks the signature, this type the expiry.
    struct Claims: JWTPayload {
        var sub: SubjectClaim?
        var iss: IssuerClaim?
        var aud: AudienceClaim?
        var exp: ExpirationClaim?
        var nbf: NotBeforeClaim?
        var roles: [String]?

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}
