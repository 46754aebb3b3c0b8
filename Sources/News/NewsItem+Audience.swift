import NotificationHubs

extension Audience {
    /// The category tag, or the item's `tagExpression`, or its `users` as `username:<name>` tags.
    public init(for item: NewsItem, category: String) throws(TagExpression.Invalid) {
        if let users = item.users {
            self.init(orOf: users.map { "username:" + $0 })
        } else if let expression = item.tagExpression {
            try self.init(expression: expression)
        } else {
            self.init(orOf: [category])
        }
    }
}
