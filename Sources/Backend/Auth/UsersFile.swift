import Foundation
import HummingbirdBcrypt

/// The users file: one `name:bcrypt-hash[:role,role…]` line per user, `#` comments; written by
/// `hubcast backend add-user`, read at start-up. bcrypt hashes never contain `:`.
public struct UsersFile: Sendable {
    public struct Entry: Sendable, Equatable {
        public var name: String
        public var hash: String
        public var roles: Set<String>
    }

    public private(set) var entries: [String: Entry] = [:]

    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public init() {}

    /// Parses the file's text; a malformed line is an error naming its number (never its content).
    public init(text: String) throws(Invalid) {
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 2, UserName.isValid(fields[0]), fields[1].hasPrefix("$2"), fields[1].utf8.count == 60
            else {
                throw Invalid(description: "users file line \(index + 1): expected name:bcrypt-hash[:roles]")
            }
            let roles =
                fields.count > 2
                ? Set(
                    fields[2].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                        !$0.isEmpty
                    }
                ) : []
            entries[fields[0]] = Entry(name: fields[0], hash: fields[1], roles: roles)
        }
    }

    public static func load(path: String) throws(Invalid) -> UsersFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Invalid(description: "cannot read the users file \(path)")
        }
        return try UsersFile(text: String(decoding: data, as: UTF8.self))
    }

    /// Adds or replaces a user with a fresh bcrypt hash of `password`.
    public mutating func set(name: String, password: String, roles: Set<String>, cost: UInt8) throws(Invalid) {
        guard UserName.isValid(name) else {
            throw Invalid(description: "user name must be 1–111 of letters, digits and _@#.:-")
        }
        guard !password.isEmpty else { throw Invalid(description: "empty password") }
        for role in roles where !role.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) {
            throw Invalid(description: "role names are letters, digits, _ and -")
        }
        entries[name] = Entry(name: name, hash: Bcrypt.hash(password, cost: cost), roles: roles)
    }

    public var text: String {
        var out = "# hubcast backend users: name:bcrypt-hash[:role,role]\n"
        for entry in entries.values.sorted(by: { $0.name < $1.name }) {
            out += entry.name + ":" + entry.hash
            if !entry.roles.isEmpty { out += ":" + entry.roles.sorted().joined(separator: ",") }
            out += "\n"
        }
        return out
    }

    /// Writes the file with mode 0600 through a temporary file and a rename, so a reader never sees half of it.
    public func write(path: String) throws(Invalid) {
        let temp = path + ".tmp-\(getpid())"
        guard
            FileManager.default.createFile(
                atPath: temp,
                contents: Data(text.utf8),
                attributes: [.posixPermissions: 0o600]
            )
        else {
            throw Invalid(description: "cannot write \(temp)")
        }
        guard rename(temp, path) == 0 else {
            try? FileManager.default.removeItem(atPath: temp)
            throw Invalid(description: "cannot replace \(path)")
        }
    }
}
