import Foundation
import Synchronization

/// Caches one SAS token per (resource URI, key name), shared by every sender, and mints a new
/// one only when the cached one is within `refreshMargin` of expiry (or was rejected).
public final class TokenProvider: Sendable {
    /// Token lifetime and how early it is replaced; defaults follow the .NET SDK (20 min, 2 min early).
    public struct Configuration: Sendable {
        public var ttlSeconds: Int64 = 20 * 60
        public var refreshMarginSeconds: Int64 = 2 * 60
        public init() {}
    }

    private struct Key: Hashable {
        let resource: String
        let keyName: String
    }

    private let connection: ConnectionString
    private let configuration: Configuration
    private let now: @Sendable () -> Int64
    // Minting is a few microseconds of HMAC: doing it under the lock is what makes it happen once.
    private let cache = Mutex<[Key: SASToken]>([:])
    private let minted = Atomic<Int>(0)

    public init(
        connection: ConnectionString,
        configuration: Configuration = Configuration(),
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        self.connection = connection
        self.configuration = configuration
        self.now = now
    }

    /// How many tokens have been minted (for metrics and tests).
    public var mintCount: Int { minted.load(ordering: .relaxed) }

    /// The token for `resourceURI`, minted only if none is cached or it is about to expire.
    public func token(for resourceURI: String) -> SASToken {
        let key = Key(resource: resourceURI, keyName: connection.keyName)
        return cache.withLock { cache in
            let current = now()
            if let token = cache[key], token.expiry - configuration.refreshMarginSeconds > current { return token }
            return mint(key, at: current, into: &cache)
        }
    }

    /// After a 401: replaces `rejected` unless another sender already did.
    public func refresh(for resourceURI: String, rejected: SASToken) -> SASToken {
        let key = Key(resource: resourceURI, keyName: connection.keyName)
        return cache.withLock { cache in
            if let token = cache[key], token != rejected { return token }
            return mint(key, at: now(), into: &cache)
        }
    }

    private func mint(_ key: Key, at current: Int64, into cache: inout [Key: SASToken]) -> SASToken {
        let token = SASToken(
            resourceURI: key.resource,
            keyName: key.keyName,
            key: connection.key,
            expiry: current + configuration.ttlSeconds
        )
        cache[key] = token
        minted.add(1, ordering: .relaxed)
        return token
    }
}
