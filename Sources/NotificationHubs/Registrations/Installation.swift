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

    /// A browser's push subscription (Web Push): where to send, and the keys to encrypt with.
    public struct BrowserPushChannel: Sendable, Codable, Equatable {
        public var endpoint: String
        public var p256dh: String
        public var auth: String
        public init(endpoint: String, p256dh: String, auth: String) {
            self.endpoint = endpoint
            self.p256dh = p256dh
            self.auth = auth
        }
    }

    public var installationId: String
    /// `apns`, `fcmv1`, `gcm`, `wns`, `browser`, …
    public var platform: String
    /// The device's handle; a browser's subscription endpoint for `browser`.
    public var pushChannel: String
    /// `browser`: the whole subscription, which the JSON carries as `pushChannel` (an object).
    public var browserPushChannel: BrowserPushChannel?
    public var tags: [String]?
    public var templates: [String: Template]?
    /// The installation's user: its system tag `$UserId:{userId}` reaches every installation of one user.
    public var userId: String?

    public init(
        installationId: String,
        platform: String,
        pushChannel: String,
        tags: [String]? = nil,
        templates: [String: Template]? = nil,
        userId: String? = nil,
        browserPushChannel: BrowserPushChannel? = nil
    ) {
        self.userId = userId
        self.browserPushChannel = browserPushChannel
        self.installationId = installationId
        self.platform = platform
        self.pushChannel = pushChannel
        self.tags = tags
        self.templates = templates
    }

    private enum CodingKeys: String, CodingKey { case installationId, platform, pushChannel, tags, templates, userId }

    /// `pushChannel` is a string, or for browsers the subscription object.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        installationId = try c.decode(String.self, forKey: .installationId)
        platform = try c.decode(String.self, forKey: .platform)
        if let browser = try? c.decode(BrowserPushChannel.self, forKey: .pushChannel) {
            browserPushChannel = browser
            pushChannel = browser.endpoint
        } else {
            pushChannel = try c.decode(String.self, forKey: .pushChannel)
        }
        tags = try c.decodeIfPresent([String].self, forKey: .tags)
        templates = try c.decodeIfPresent([String: Template].self, forKey: .templates)
        userId = try c.decodeIfPresent(String.self, forKey: .userId)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(installationId, forKey: .installationId)
        try c.encode(platform, forKey: .platform)
        if let browserPushChannel {
            try c.encode(browserPushChannel, forKey: .pushChannel)
        } else {
            try c.encode(pushChannel, forKey: .pushChannel)
        }
        try c.encodeIfPresent(tags, forKey: .tags)
        try c.encodeIfPresent(templates, forKey: .templates)
        try c.encodeIfPresent(userId, forKey: .userId)
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
