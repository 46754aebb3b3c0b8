/// An installation (`PUT /{hub}/installations/{id}`): the JSON form of a device's registrations.
public struct Installation: Sendable, Codable, Equatable {
    /// A named template of an installation.
    public struct Template: Sendable, Codable, Equatable {
        public var body: String
        public var tags: [String]?
        public init(body: String, tags: [String]? = nil) {
            self.body = body
            self.tags = tags
        }
    }

    public var installationId: String
    /// `apns`, `fcmv1`, `gcm`, `wns`, …
    public var platform: String
    public var pushChannel: String
    public var tags: [String]?
    public var templates: [String: Template]?
    /// The installation's user: its system tag `$UserId:{userId}` reaches every installation of one user.
    public var userId: String?

    public init(installationId: String, platform: String, pushChannel: String, tags: [String]? = nil, templates: [String: Template]? = nil,
                userId: String? = nil) {
        self.userId = userId
        self.installationId = installationId
        self.platform = platform
        self.pushChannel = pushChannel
        self.tags = tags
        self.templates = templates
    }
}

/// One JSON Patch operation on an installation (`/tags`, `/tags/<tag>`, `/templates/<name>`).
public struct InstallationPatch: Sendable, Codable, Equatable {
    public enum Operation: String, Sendable, Codable { case add, remove, replace }
    public var op: Operation
    public var path: String
    public var value: String?

    public init(op: Operation, path: String, value: String? = nil) {
        self.op = op
        self.path = path
        self.value = value
    }
}
