/// A breaking-news item as the newsroom publishes it (schemas/news-item.schema.json).
public struct NewsItem: Sendable, Equatable {
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
    /// nil: the item named none (its category's default applies, else `normal`).
    public var priority: Priority?

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
        priority: Priority? = nil
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
        self.priority = priority
    }

    /// True when the item has an `expiresAt` at or before `now`.
    public func isExpired(atEpochSeconds now: Double) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt.epochSeconds <= now
    }
}
