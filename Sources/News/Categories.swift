import TextFormats

/// The news categories and the Kafka topic of each: `<prefix><category lowercased>` unless overridden.
public struct Categories: Sendable, Equatable {
    /// The six categories of the breaking-news seeds.
    public static let seedNames = ["World", "Politics", "Business", "Technology", "Science", "Sports"]

    public let names: [String]
    public let prefix: String
    private let topicByCategory: [String: String]
    private let categoryByTopic: [String: String]

    /// `overrides` maps a category to a topic name of its own.
    public init(
        names: [String] = Categories.seedNames,
        prefix: String = "news.",
        overrides: [String: String] = [:]
    ) throws(NewsItemError) {
        guard !names.isEmpty else {
            throw NewsItemError(kind: .schema, field: "categories", reason: "must name at least one category")
        }
        var topics: [String: String] = [:]
        var categories: [String: String] = [:]
        for name in names {
            guard TagSyntax.isTag(name) else {
                throw NewsItemError(
                    kind: .schema,
                    field: "categories",
                    reason: "has \"\(name)\", which is not a valid tag (letters, digits and _@#.:- up to 120)"
                )
            }
            let topic = overrides[name] ?? prefix + name.lowercased()
            if let other = categories[topic] {
                throw NewsItemError(
                    kind: .schema,
                    field: "categories",
                    reason: "map both \(other) and \(name) to topic \(topic)"
                )
            }
            topics[name] = topic
            categories[topic] = name
        }
        for key in overrides.keys where topics[key] == nil {
            throw NewsItemError(kind: .schema, field: "categories", reason: "override for unknown category \(key)")
        }
        self.names = names
        self.prefix = prefix
        topicByCategory = topics
        categoryByTopic = categories
    }

    public func topic(for category: String) -> String? { topicByCategory[category] }

    /// The category (and so the tag) a topic carries.
    public func category(forTopic topic: String) -> String? { categoryByTopic[topic] }

    public var topics: [String] { names.compactMap { topicByCategory[$0] } }
}
