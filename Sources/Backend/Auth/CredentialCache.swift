import Crypto
import Foundation
import Synchronization

/// Remembers Basic credentials that bcrypt has accepted, for a short time: without it every call
/// pays a full bcrypt (about 250 ms at cost 12), and a breaking-news burst of devices fetching their
/// secure payloads would be bcrypt-bound at a few calls per second. Entries are keyed by an HMAC of
/// `name:password` under a random key made at start-up and never stored, so memory holds no password
/// and nothing that can be checked offline. A wrong password is a different key: it always gets bcrypt.
final class CredentialCache: Sendable {
    struct Entry {
        let principal: Principal
        let expiresAt: Double
    }

    private let key = SymmetricKey(size: .bits256)
    private let ttl: Double
    private let capacity: Int
    private let entries = Mutex<[Data: Entry]>([:])

    init(ttl: Double, capacity: Int = 10_000) {
        self.ttl = ttl
        self.capacity = capacity
    }

    var isEnabled: Bool { ttl > 0 }

    func lookup(name: String, password: String, now: Double) -> Principal? {
        guard isEnabled else { return nil }
        let id = digest(name, password)
        return entries.withLock { entries in
            guard let entry = entries[id] else { return nil }
            guard entry.expiresAt > now else {
                entries[id] = nil
                return nil
            }
            return entry.principal
        }
    }

    func store(_ principal: Principal, password: String, now: Double) {
        guard isEnabled else { return }
        let id = digest(principal.name, password)
        entries.withLock { entries in
            if entries.count >= capacity {
                entries = entries.filter { $0.value.expiresAt > now }
                // Still full of live entries: start over rather than grow; they come back at one bcrypt each.
                if entries.count >= capacity { entries.removeAll() }
            }
            entries[id] = Entry(principal: principal, expiresAt: now + ttl)
        }
    }

    private func digest(_ name: String, _ password: String) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: Data("\(name.utf8.count):\(name):\(password)".utf8), using: key))
    }
}
