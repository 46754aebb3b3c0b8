import Foundation
import JWTKit
import TestSupport
import Testing

/// Bearer JWTs against the real backend: a good token works; expired, wrong issuer, wrong audience,
/// wrong key and `alg: none` are all 401.
@Suite(.serialized) struct BearerTests {
    struct Claims: JWTPayload {
        var sub: SubjectClaim
        var iss: IssuerClaim
        var aud: AudienceClaim
        var exp: ExpirationClaim
        var roles: [String]?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func token(
        sub: String = "dave",
        iss: String = BackendHarness.jwtIssuer,
        aud: String = BackendHarness.jwtAudience,
        expiresIn: TimeInterval = 600,
        secret: String = BackendHarness.jwtSecret,
        roles: [String]? = nil
    ) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: Array(secret.utf8)), digestAlgorithm: .sha256)
        return try await keys.sign(
            Claims(
                sub: .init(value: sub),
                iss: .init(value: iss),
                aud: .init(value: [aud]),
                exp: .init(value: Date().addingTimeInterval(expiresIn)),
                roles: roles
            )
        )
    }

    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(
            of: "/",
            with: "_"
        )
        .replacingOccurrences(of: "=", with: "")
    }

    @Test func bearerTokens() async throws {
        let harness = try await BackendHarness(store: .sqlite)
        defer { harness.stop() }
        let base = try await harness.startBackend(["--no-consumer"])
        let handle = String(repeating: "0F", count: 32)
        func register(_ auth: String) async throws -> Int {
            try await HTTP.call("POST", base + "/api/register?handle=\(handle)", auth: auth).status
        }

        let good = try await Self.token()
        #expect(try await register("Bearer " + good) == 200)
        #expect(try await register("Bearer " + Self.token(expiresIn: -3600)) == 401)
        #expect(try await register("Bearer " + Self.token(iss: "https://evil.example/")) == 401)
        #expect(try await register("Bearer " + Self.token(aud: "someone-else")) == 401)
        #expect(try await register("Bearer " + Self.token(secret: "another-secret-that-is-long-enough-0123")) == 401)
        let payload =
            #"{"sub":"dave","iss":"\#(BackendHarness.jwtIssuer)","aud":"\#(BackendHarness.jwtAudience)","exp":\#(Int(Date().timeIntervalSince1970) + 600)}"#
        let unsigned = Self.base64URL(#"{"alg":"none","typ":"JWT"}"#) + "." + Self.base64URL(payload) + "."
        #expect(try await register("Bearer " + unsigned) == 401)
        #expect(try await register("Bearer not.a.token") == 401)

        // The role claim: a token with `sender` may notify another user, one without may not.
        #expect(
            try await HTTP.call(
                "POST",
                base + "/api/notifications?to_tag=alice",
                auth: "Bearer " + good,
                body: #""hi""#,
                headers: ["Content-Type: application/json"]
            ).status == 403
        )
        #expect(
            try await HTTP.call(
                "POST",
                base + "/api/notifications?to_tag=alice",
                auth: "Bearer " + Self.token(roles: ["sender"]),
                body: #""hi""#,
                headers: ["Content-Type: application/json"]
            ).status == 200
        )
        #expect(!harness.logs.contains(good))
    }
}
