import TextFormats

/// Decodes and validates a news item exactly as schemas/news-item.schema.json specifies.
public struct NewsItemDecoder: Sendable {
    /// Largest message accepted, in bytes (the Kafka message value).
    public var maxMessageBytes: Int
    public static let defaultMaxMessageBytes = 64 * 1024

    public static let maxIDLength = 128
    public static let maxHeadlineLength = 512
    public static let maxUsers = 1000
    /// `username:` plus the name must stay a valid tag.
    public static let maxUserNameLength = TagSyntax.maxLength - "username:".count
    public static let maxPropertyNameLength = 120

    public init(maxMessageBytes: Int = NewsItemDecoder.defaultMaxMessageBytes) {
        self.maxMessageBytes = maxMessageBytes
    }

    /// Decodes one message; `topicCategory` is the category of the topic it came from, if any.
    public func decode(_ bytes: UnsafeRawBufferPointer, topicCategory: String? = nil) throws(NewsItemError) -> NewsItem
    {
        guard bytes.count <= maxMessageBytes else {
            throw NewsItemError(
                kind: .oversize,
                reason: "message is \(bytes.count) bytes, over the \(maxMessageBytes)-byte limit"
            )
        }
        var fields = Fields()
        let notAnObject: JSONValue?
        do {
            notAnObject = try JSONParser.parseMembers(bytes) { fields.set($0, $1) }
        } catch {
            throw NewsItemError(kind: .malformedJSON, reason: "not valid JSON: \(error)")
        }
        if let notAnObject {
            throw NewsItemError(kind: .schema, reason: "a news item must be a JSON object, not \(notAnObject.typeName)")
        }
        return try validate(fields, topicCategory: topicCategory)
    }

    public func decode(_ bytes: [UInt8], topicCategory: String? = nil) throws(NewsItemError) -> NewsItem {
        let result: Result<NewsItem, NewsItemError> = bytes.withUnsafeBytes { raw in
            do throws(NewsItemError) { return .success(try decode(raw, topicCategory: topicCategory)) } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The members of an item the schema knows, each the last written (as a JSON object keeps
    /// it); any other member is read, checked as JSON and ignored, as the schema allows.
    private struct Fields {
        var id, headline, category, body, url, imageUrl, locale, tagExpression, users, properties, secure: JSONValue?
        var publishedAt, expiresAt, sendAt, priority, platforms, notifications, tenant: JSONValue?

        mutating func set(_ key: String, _ value: JSONValue) {
            switch key {
            case "id": id = value
            case "headline": headline = value
            case "category": category = value
            case "body": body = value
            case "url": url = value
            case "imageUrl": imageUrl = value
            case "locale": locale = value
            case "tagExpression": tagExpression = value
            case "users": users = value
            case "properties": properties = value
            case "secure": secure = value
            case "publishedAt": publishedAt = value
            case "expiresAt": expiresAt = value
            case "sendAt": sendAt = value
            case "priority": priority = value
            case "platforms": platforms = value
            case "notifications": notifications = value
            case "tenant": tenant = value
            default: break
            }
        }
    }

    /// Checks an item's members against the schema's rules.
    private func validate(_ o: Fields, topicCategory: String?) throws(NewsItemError) -> NewsItem {
        let id = try requiredString(o.id, "id")
        guard !id.isEmpty else { throw .schema("id", "must be 1 to \(Self.maxIDLength) characters, got 0") }
        if let count = Self.scalars(id, over: Self.maxIDLength) {
            throw .schema("id", "must be 1 to \(Self.maxIDLength) characters, got \(count)")
        }
        let headline = Self.trimmed(try requiredString(o.headline, "headline"))
        guard !headline.isEmpty else { throw .schema("headline", "is empty") }
        if let count = Self.scalars(headline, over: Self.maxHeadlineLength) {
            throw .schema("headline", "is \(count) characters after trimming, over \(Self.maxHeadlineLength)")
        }
        let category = try optionalString(o.category, "category")
        if let category {
            guard TagSyntax.isTag(category) else {
                throw .schema("category", "must be a tag: 1 to 120 of letters, digits and _@#.:-")
            }
            if let topicCategory, category != topicCategory {
                throw NewsItemError(
                    kind: .categoryMismatch,
                    field: "category",
                    reason: "is \"\(category)\" but the item was published to the \(topicCategory) topic"
                )
            }
        }
        let tagExpression = try optionalString(o.tagExpression, "tagExpression")
        if let tagExpression, tagExpression.isEmpty { throw .schema("tagExpression", "is empty") }
        let users = try userList(o.users)
        if tagExpression != nil && users != nil {
            throw .schema("users", "cannot be combined with tagExpression: give one audience")
        }
        let secure = try optionalBool(o.secure, "secure") ?? false
        let expiresAt = try timestamp(o.expiresAt, "expiresAt")
        let sendAt = try timestamp(o.sendAt, "sendAt")
        if let sendAt, let expiresAt, sendAt.epochSeconds >= expiresAt.epochSeconds {
            throw .schema("sendAt", "is not before expiresAt: the item would expire before it is sent")
        }
        let tenant = try optionalString(o.tenant, "tenant")
        if let tenant, !TagSyntax.isTag(tenant) {
            throw .schema("tenant", "must be 1 to 120 of letters, digits and _@#.:-")
        }
        let notifications = try payloads(o.notifications)
        if secure && !notifications.isEmpty {
            throw .schema("notifications", "cannot be given for a secure item: only its id may go out")
        }
        return NewsItem(
            id: id,
            headline: headline,
            category: category,
            body: try optionalString(o.body, "body"),
            url: try optionalString(o.url, "url"),
            imageUrl: try optionalString(o.imageUrl, "imageUrl"),
            locale: try optionalString(o.locale, "locale"),
            tagExpression: tagExpression,
            users: users,
            properties: try propertyMap(o.properties),
            secure: secure,
            publishedAt: try timestamp(o.publishedAt, "publishedAt"),
            expiresAt: expiresAt,
            sendAt: sendAt,
            priority: try priority(o.priority),
            platforms: try platformList(o.platforms),
            notifications: notifications,
            tenant: tenant
        )
    }

    private func platformList(_ value: JSONValue?) throws(NewsItemError) -> [NewsItem.Platform]? {
        guard let value else { return nil }
        let count = NewsItem.Platform.allCases.count
        guard case .array(let array) = value else {
            throw .schema("platforms", "must be an array of platform names, not \(value.typeName)")
        }
        guard (1...count).contains(array.count) else {
            throw .schema("platforms", "must list 1 to \(count) platforms, got \(array.count)")
        }
        var platforms: [NewsItem.Platform] = []
        for (i, element) in array.enumerated() {
            guard case .string(let name) = element else {
                throw .schema("platforms[\(i)]", "must be a string, not \(element.typeName)")
            }
            let platform = try NewsItem.Platform(named: name, field: "platforms[\(i)]")
            guard !platforms.contains(platform) else {
                throw .schema("platforms[\(i)]", "names \(name) a second time")
            }
            platforms.append(platform)
        }
        return platforms
    }

    private func payloads(_ value: JSONValue?) throws(NewsItemError) -> [NewsItem.Platform: NewsItem.Payload] {
        guard let value else { return [:] }
        guard case .object(let map) = value, !map.isEmpty else {
            throw .schema(
                "notifications",
                "must be an object of payloads by platform, such as {\"apple\": {\"aps\": …}}"
            )
        }
        var payloads: [NewsItem.Platform: NewsItem.Payload] = [:]
        for (name, payload) in map.sorted(by: { $0.key < $1.key }) {
            let field = "notifications.\(name.prefix(40))"
            switch NewsItem.Platform(rawValue: name) {
            case .apple?, .fcmv1?:
                guard case .object = payload else {
                    throw .schema(field, "must be a JSON object (the platform's payload), not \(payload.typeName)")
                }
                payloads[NewsItem.Platform(rawValue: name) ?? .apple] = .json(payload)
            case .windows?:
                guard case .string(let xml) = payload, !xml.isEmpty else {
                    throw .schema(
                        field,
                        "must be the XML of a toast, tile or badge as a string, not \(payload.typeName)"
                    )
                }
                payloads[.windows] = .xml(xml)
            case .template?:
                throw .schema(field, "is not a payload: a template send takes the item's properties")
            case nil:
                throw .schema(field, Self.unknownPlatform(name, allowed: [.apple, .fcmv1, .windows]))
            }
        }
        return payloads
    }

    fileprivate static func unknownPlatform(_ name: String, allowed: [NewsItem.Platform]) -> String {
        let names = allowed.map(\.rawValue).joined(separator: ", ")
        if name == "gcm" || name == "fcm" { return "is the legacy FCM API, retired by Google in June 2024: use fcmv1" }
        return "must be one of \(names), got \"\(name.prefix(40))\""
    }

    private func priority(_ value: JSONValue?) throws(NewsItemError) -> Priority? {
        guard let name = try optionalString(value, "priority") else { return nil }
        guard let priority = Priority(name: name) else {
            throw .schema("priority", "must be one of breaking, normal, bulk, got \"\(name.prefix(40))\"")
        }
        return priority
    }

    private func requiredString(_ value: JSONValue?, _ field: String) throws(NewsItemError) -> String {
        guard let value else { throw .schema(field, "is required") }
        guard case .string(let s) = value else { throw .schema(field, "must be a string, not \(value.typeName)") }
        return s
    }

    private func optionalString(_ value: JSONValue?, _ field: String) throws(NewsItemError) -> String? {
        guard let value else { return nil }
        guard case .string(let s) = value else { throw .schema(field, "must be a string, not \(value.typeName)") }
        return s
    }

    private func optionalBool(_ value: JSONValue?, _ field: String) throws(NewsItemError) -> Bool? {
        guard let value else { return nil }
        guard case .bool(let b) = value else { throw .schema(field, "must be true or false, not \(value.typeName)") }
        return b
    }

    private func timestamp(_ value: JSONValue?, _ field: String) throws(NewsItemError) -> Timestamp? {
        guard let text = try optionalString(value, field) else { return nil }
        guard let t = Timestamp(rfc3339: text) else {
            throw .schema(
                field,
                "must be an RFC 3339 date-time such as 2026-11-22T18:30:00Z, got \"\(text.prefix(40))\""
            )
        }
        return t
    }

    private func userList(_ value: JSONValue?) throws(NewsItemError) -> [String]? {
        guard let value else { return nil }
        guard case .array(let array) = value else {
            throw .schema("users", "must be an array of user names, not \(value.typeName)")
        }
        guard (1...Self.maxUsers).contains(array.count) else {
            throw .schema("users", "must list 1 to \(Self.maxUsers) user names, got \(array.count)")
        }
        var users: [String] = []
        users.reserveCapacity(array.count)
        for (i, element) in array.enumerated() {
            guard case .string(let name) = element else {
                throw .schema("users[\(i)]", "must be a string, not \(element.typeName)")
            }
            guard name.utf8.count <= Self.maxUserNameLength, TagSyntax.isTag(name) else {
                throw .schema("users[\(i)]", "must be 1 to \(Self.maxUserNameLength) of letters, digits and _@#.:-")
            }
            users.append(name)
        }
        return users
    }

    private func propertyMap(_ value: JSONValue?) throws(NewsItemError) -> [String: String] {
        guard let value else { return [:] }
        guard case .object(let map) = value else {
            throw .schema("properties", "must be an object of strings, not \(value.typeName)")
        }
        var properties: [String: String] = [:]
        for (name, element) in map {
            guard (1...Self.maxPropertyNameLength).contains(name.utf8.count),
                name.utf8.allSatisfy(Self.isPropertyNameByte)
            else {
                throw .schema(
                    "properties.\(name.prefix(40))",
                    "is not a template property name: 1 to 120 of letters, digits and _"
                )
            }
            guard case .string(let s) = element else {
                throw .schema("properties.\(name)", "must be a string, not \(element.typeName)")
            }
            properties[name] = s
        }
        return properties
    }

    private static func isPropertyNameByte(_ b: UInt8) -> Bool {
        b == UInt8(ascii: "_")
            || TagSyntax.isTagByte(b) && b != UInt8(ascii: "@") && b != UInt8(ascii: "#")
                && b != UInt8(ascii: ".") && b != UInt8(ascii: ":") && b != UInt8(ascii: "-")
    }

    /// How many Unicode scalars `s` has when that is more than `limit`, else nil. Counted only
    /// when its UTF-8 could hold more (a scalar is 1 to 4 bytes): most ids and headlines cannot.
    static func scalars(_ s: String, over limit: Int) -> Int? {
        guard s.utf8.count > limit else { return nil }
        let count = s.unicodeScalars.count
        return count > limit ? count : nil
    }

    static func trimmed(_ s: String) -> String {
        // Most headlines start and end with a visible ASCII character: nothing to trim or copy.
        if let first = s.utf8.first, let last = s.utf8.last, Self.isVisibleASCII(first), Self.isVisibleASCII(last) {
            return s
        }
        let scalars = s.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }

    private static func isVisibleASCII(_ b: UInt8) -> Bool { b > 0x20 && b < 0x7F }
}

extension NewsItem.Platform {
    /// The platform of that name, or an error naming `field`.
    public init(named name: String, field: String) throws(NewsItemError) {
        guard let platform = Self(rawValue: name) else {
            throw .schema(field, NewsItemDecoder.unknownPlatform(name, allowed: Self.allCases))
        }
        self = platform
    }
}
