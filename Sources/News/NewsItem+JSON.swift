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
        w.member("priority", priority?.name)
        w.endObject()
        return w.bytes
    }
}
