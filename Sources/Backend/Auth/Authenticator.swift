import Foundation
import HummingbirdBcrypt
import Metrics
import NIOPosix
import Synchronization

/// Checks `Authorization` on every call: HTTP Basic against the users file (as the seeds' clients
/// send it) and Bearer JWTs. Failed attempts are counted per user and per client address; a locked
/// key is refused before any password is checked, so guessing costs the guesser, not our CPU.
public final class Authenticator: Sendable {
    public enum Failure: Error, Equatable, Sendable {
        /// No or malformed credentials: 401.
        case unauthenticated
        /// Too many failures: 429 with `Retry-After`.
        case locked(retryAfter: Int)
        /// Basic over plain http from another host: 401, the password has already crossed the network.
        case needsTLS
    }

    let users: UsersFile
    let bearer: BearerVerifier?
    /// Failed logins, every user and address together (`/metrics`: a spike is someone guessing).
    private let loginFailures = Counter(label: "hubcast_backend_login_failures")
    let failures: any FailedLogins
    /// A hash checked for unknown users, so an unknown name costs as long as a wrong password.
    let decoyHash: String
    let now: @Sendable () -> Double
    let cache: CredentialCache

    /// `cacheSeconds`: how long a bcrypt-verified name and password are remembered (0: never).
    public init(
        users: UsersFile,
        bearer: BearerVerifier?,
        failures: any FailedLogins = LocalFailedLogins(),
        cacheSeconds: Double = 300,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.users = users
        self.cache = CredentialCache(ttl: cacheSeconds)
        self.bearer = bearer
        self.failures = failures
        self.now = now
        let cost = users.entries.values.first.flatMap { Self.cost(of: $0.hash) } ?? 12
        decoyHash = Bcrypt.hash(UUID().uuidString, cost: cost)
    }

    /// `plainHTTPAllowed`: the request came over TLS, from loopback, or the operator allowed plain http.
    public func authenticate(
        authorization: String?,
        address: String,
        plainHTTPAllowed: Bool
    ) async throws(Failure) -> Principal {
        guard let authorization, let space = authorization.firstIndex(of: " ") else { throw .unauthenticated }
        let scheme = authorization[..<space].lowercased()
        let credentials = authorization[authorization.index(after: space)...].trimmingCharacters(in: .whitespaces)
        switch scheme {
        case "basic":
            guard plainHTTPAllowed else { throw .needsTLS }
            return try await basic(credentials, address: address)
        case "bearer":
            return try await bearerToken(credentials, address: address)
        default:
            throw .unauthenticated
        }
    }

    private func basic(_ credentials: String, address: String) async throws(Failure) -> Principal {
        // Seed 003 encodes with NSDataBase64EncodingEndLineWithCarriageReturn: tolerate line breaks.
        let compact = credentials.filter { !$0.isWhitespace }
        guard compact.utf8.count <= 4096, let data = Data(base64Encoded: compact),
            let decoded = String(data: data, encoding: .utf8), let colon = decoded.firstIndex(of: ":")
        else {
            try await checkAddress(address)
            await record(failureOf: nil, address: address)
            throw .unauthenticated
        }
        let name = String(decoded[..<colon])
        let password = String(decoded[decoded.index(after: colon)...])
        let keys: [LoginThrottle.Key] = [.user(name), .address(address)]
        if case .locked(let retryAfter) = await failures.decide(keys, now: now()) {
            throw .locked(retryAfter: retryAfter)
        }

        if let known = cache.lookup(name: name, password: password, now: now()) { return known }
        let entry = users.entries[name]
        let hash = entry?.hash ?? decoyHash
        // bcrypt is deliberately slow CPU work: it runs on NIO's thread pool, not the cooperative pool.
        let matches = (try? await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: hash) }) ?? false
        guard let entry, matches else {
            await record(failureOf: name, address: address)
            throw .unauthenticated
        }
        await failures.recordSuccess(user: name)
        let principal = Principal(name: entry.name, roles: entry.roles)
        cache.store(principal, password: password, now: now())
        return principal
    }

    private func bearerToken(_ token: String, address: String) async throws(Failure) -> Principal {
        try await checkAddress(address)
        guard let bearer else {
            await record(failureOf: nil, address: address)
            throw .unauthenticated
        }
        do {
            return try await bearer.verify(token)
        } catch {
            await record(failureOf: nil, address: address)
            throw .unauthenticated
        }
    }

    private func checkAddress(_ address: String) async throws(Failure) {
        if case .locked(let retryAfter) = await failures.decide([.address(address)], now: now()) {
            throw .locked(retryAfter: retryAfter)
        }
    }

    private func record(failureOf name: String?, address: String) async {
        loginFailures.increment()
        var keys: [LoginThrottle.Key] = [.address(address)]
        if let name { keys.append(.user(name)) }
        await failures.recordFailure(keys, now: now())
    }

    /// The cost field of a `$2b$12$…` hash.
    static func cost(of hash: String) -> UInt8? {
        let fields = hash.split(separator: "$")
        guard fields.count >= 2 else { return nil }
        return UInt8(fields[1])
    }
}
