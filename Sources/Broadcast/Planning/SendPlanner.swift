import News
import NotificationHubs

/// One send: an audience expression within NH's limits and what it carries.
public struct PlannedSend: Sendable {
    public let tagExpression: String
    public let notification: HubNotification

    public init(tagExpression: String, notification: HubNotification) {
        self.tagExpression = tagExpression
        self.notification = notification
    }

    /// A template send.
    public init(tagExpression: String, properties: [(String, String)]) {
        self.init(tagExpression: tagExpression, notification: .template(properties))
    }

    /// `template`, or the native platform's name: what dead letters and logs call it.
    public var platform: String { notification.format }
}

/// Turns a validated news item into the sends that reach its audience.
public enum SendPlanner {
    /// Why an item cannot be sent as it is; safe to log.
    public enum Refusal: Error, Sendable, CustomStringConvertible {
        case audience(TagExpression.Invalid)
        case payload(LintViolation)

        public var description: String {
            switch self {
            case .audience(let invalid): invalid.description
            case .payload(let violation): violation.description
            }
        }
    }

    /// One send per platform and audience expression (a long `users` list becomes several),
    /// before anything touches the network: an invalid tag expression or a native payload that
    /// breaks its platform's rules refuses the whole item, so that nothing of it goes out and a
    /// replay of the fixed item sends each platform once.
    ///
    /// `expiresAt` bounds the native notifications' time to live; `audience` and `platform` (a
    /// replay of one failed send) keep only that send.
    public static func plan(
        _ item: NewsItem,
        category: String,
        priority: Priority = .normal,
        expiresAt: Double? = nil,
        now: Double = 0,
        audience: String? = nil,
        platform: String? = nil
    ) throws(Refusal) -> [PlannedSend] {
        let expressions: [String]
        if let audience {
            expressions = [audience]
        } else {
            do {
                expressions = try Audience(users: item.users, expression: item.tagExpression, orTag: category)
                    .expressions
            } catch {
                throw .audience(error)
            }
        }
        let context = NativeRendering.Context(category: category, priority: priority, expiresAt: expiresAt, now: now)
        let platforms = item.sendPlatforms
        var sends: [PlannedSend] = []
        sends.reserveCapacity(platforms.count * expressions.count)
        for target in platforms where platform == nil || target.rawValue == platform {
            let notification: HubNotification
            if let native = NativePlatform(rawValue: target.rawValue) {
                let rendered = NativeRendering.notification(for: item, on: native, context)
                if let violation = rendered.violation { throw .payload(violation) }
                notification = .native(rendered)
            } else {
                notification = .template(TemplateProperties.build(for: item, category: category))
            }
            for expression in expressions {
                sends.append(PlannedSend(tagExpression: expression, notification: notification))
            }
        }
        return sends
    }
}
