import TextFormats

/// A breaking-news item as the newsroom publishes it (schemas/news-item.schema.json).
public struct NewsItem: Sendable, Equatable {
    /// Where an item goes: devices' templates, or a push service natively.
    public enum Platform: String, Sendable, Hashable, CaseIterable {
        case template, apple, fcmv1, windows
    }

    /// A payload the newsroom wrote for one platform: JSON for APNs and FCM v1, XML for WNS.
    public enum Payload: Sendable, Equatable {
        case json(JSONValue)
        case xml(String)
    }

    /// Dedupe and idempotency key, 1–128 characters.
    public var id: String
    /// Trimmed, 1–512 characters.
    public var headline: String
    public var category: String?
    public var body: String?
    public var url: String?
    public var imageUrl: String?
    public var locale: String?
    /// An NH tag expression that replaces the category tag as the audience.
    public var tagExpression: String?
    /// User names; each becomes the tag `username:<name>`.
    public var users: [String]?
    /// Extra template properties.
    public var properties: [String: String]
    /// Only the id goes out; the payload stays with the backend (seed 001).
    public var secure: Bool
    public var publishedAt: Timestamp?
    public var expiresAt: Timestamp?
    /// When the hub should send it; nil: now.
    public var sendAt: Timestamp?
    /// nil: the item named none (its category's default applies, else `normal`).
    public var priority: Priority?
    /// As the item lists them; nil: none listed.
    public var platforms: [Platform]?
    /// Explicit payloads by platform (never `template`); each implies its platform.
    public var notifications: [Platform: Payload]
    /// Whose item it is, where one pipeline serves several brands or regions: routes it to a hub.
    public var tenant: String?

    public init(
        id: String,
        headline: String,
        category: String? = nil,
        body: String? = nil,
        url: String? = nil,
        imageUrl: String? = nil,
        locale: String? = nil,
        tagExpression: String? = nil,
        users: [String]? = nil,
        properties: [String: String] = [:],
        secure: Bool = false,
        publishedAt: Timestamp? = nil,
        expiresAt: Timestamp? = nil,
        sendAt: Timestamp? = nil,
        priority: Priority? = nil,
        platforms: [Platform]? = nil,
        notifications: [Platform: Payload] = [:],
        tenant: String? = nil
    ) {
        self.id = id
        self.headline = headline
        self.category = category
        self.body = body
        self.url = url
        self.imageUrl = imageUrl
        self.locale = locale
        self.tagExpression = tagExpression
        self.users = users
        self.properties = properties
        self.secure = secure
        self.publishedAt = publishedAt
        self.expiresAt = expiresAt
        self.sendAt = sendAt
        self.priority = priority
        self.platforms = platforms
        self.notifications = notifications
        self.tenant = tenant
    }

    /// Shared: most items are this, and the planner asks for every one.
    private static let templateOnly: [Platform] = [.template]

    /// Each platform the item is sent to, once: those listed, then those with an explicit
    /// payload; `template` alone when the item names neither.
    public var sendPlatforms: [Platform] {
        if platforms == nil && notifications.isEmpty { return Self.templateOnly }
        var result = platforms ?? []
        for platform in Platform.allCases where notifications[platform] != nil && !result.contains(platform) {
            result.append(platform)
        }
        return result
    }

    /// True when the item has an `expiresAt` at or before `now`.
    public func isExpired(atEpochSeconds now: Double) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt.epochSeconds <= now
    }
}
