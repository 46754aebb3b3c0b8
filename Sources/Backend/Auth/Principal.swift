/// An authenticated caller: a user name (their `username:` tag) and roles.
public struct Principal: Sendable, Equatable {
    public let name: String
    public let roles: Set<String>

    public init(name: String, roles: Set<String>) {
        self.name = name
        self.roles = roles
    }

    /// May notify users other than themselves (`POST /api/notifications?to_tag=<someone else>`).
    public var isSender: Bool { roles.contains(Self.senderRole) }
    public static let senderRole = "sender"
}
