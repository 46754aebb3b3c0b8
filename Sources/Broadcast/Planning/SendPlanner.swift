import News
import NotificationHubs

/// One template send: an audience expression within NH's limits and the properties to render.
public struct PlannedSend: Sendable {
    public let tagExpression: String
    public let properties: [(String, String)]

    public init(tagExpression: String, properties: [(String, String)]) {
        self.tagExpression = tagExpression
        self.properties = properties
    }
}

/// Turns a validated news item into the sends that reach its audience.
public enum SendPlanner {
    /// One send per audience expression (a long `users` list becomes several); throws for an
    /// invalid tag expression, before anything touches the network.
    public static func plan(_ item: NewsItem, category: String) throws(TagExpression.Invalid) -> [PlannedSend] {
        let audience = try Audience(users: item.users, expression: item.tagExpression, orTag: category)
        let properties = TemplateProperties.build(for: item, category: category)
        return audience.expressions.map { PlannedSend(tagExpression: $0, properties: properties) }
    }
}
