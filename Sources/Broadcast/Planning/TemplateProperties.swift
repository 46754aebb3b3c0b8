import News

/// The template properties of a news item, as the seeds' devices expect them.
public enum TemplateProperties {
    /// Names hubcast sets itself; an item's own `properties` cannot replace them.
    static let reserved: Set<String> = ["messageparam", "headline", "category", "id", "url", "secure"]

    /// `messageParam` = `Breaking <Category> News : <headline>` (seed 000), then `headline`,
    /// `category`, `id`, `url`, then the item's own properties by name.
    ///
    /// A secure item (seed 001) carries only its id: devices fetch the rest from the backend.
    public static func build(for item: NewsItem, category: String) -> [(String, String)] {
        if item.secure {
            return [
                ("messageParam", "Breaking \(category) News"), ("category", category), ("id", item.id),
                ("secure", "true"),
            ]
        }
        var properties: [(String, String)] = [
            ("messageParam", "Breaking \(category) News : \(item.headline)"),
            ("headline", item.headline),
            ("category", category),
            ("id", item.id),
        ]
        if let url = item.url { properties.append(("url", url)) }
        for (name, value) in item.properties.sorted(by: { $0.key < $1.key }) where !reserved.contains(name.lowercased())
        {
            properties.append((name, value))
        }
        return properties
    }
}
