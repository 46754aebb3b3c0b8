import TextFormats

extension NewsItem {
    /// The item as the JSON the schema describes (what `hubcast produce` publishes from flags).
    public var json: [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.member("id", id)
        w.member("headline", headline)
        w.member("category", category)
        w.member("body", body)
        w.member("url", url)
        w.member("imageUrl", imageUrl)
        w.member("locale", locale)
        w.member("tagExpression", tagExpression)
        if let users {
            w.key("users")
            w.beginArray()
            for user in users { w.string(user) }
            w.endArray()
        }
        if !properties.isEmpty {
            w.key("properties")
            w.beginObject()
            for (name, value) in properties.sorted(by: { $0.key < $1.key }) { w.member(name, value) }
            w.endObject()
        }
        if secure {
            w.key("secure")
            w.bool(true)
        }
        w.member("publishedAt", publishedAt?.text)
        w.member("expiresAt", expiresAt?.text)
        w.member("sendAt", sendAt?.text)
        w.member("priority", priority?.name)
        w.member("tenant", tenant)
        if let platforms {
            w.key("platforms")
            w.beginArray()
            for platform in platforms { w.string(platform.rawValue) }
            w.endArray()
        }
        if !notifications.isEmpty {
            w.key("notifications")
            w.beginObject()
            for platform in Platform.allCases {
                switch notifications[platform] {
                case .json(let value)?:
                    w.key(platform.rawValue)
                    w.value(value)
                case .xml(let text)?: w.member(platform.rawValue, text)
                case nil: break
                }
            }
            w.endObject()
        }
        w.endObject()
        return w.bytes
    }
}
