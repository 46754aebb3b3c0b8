import Foundation
import News
import NotificationHubs

/// One send: an audience expression within NH's limits and what it carries.
public struct PlannedSend: Sendable {
    public let tagExpression: String
    public let notification: HubNotification
    /// When the hub is to send it (epoch seconds); nil: now.
    public let scheduledAt: Double?

    public init(tagExpression: String, notification: HubNotification, scheduledAt: Double? = nil) {
        self.tagExpression = tagExpression
        self.notification = notification
        self.scheduledAt = scheduledAt
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
        /// `sendAt` further ahead than the hub keeps a notification.
        case schedule(daysAhead: Double)

        public var description: String {
            switch self {
            case .audience(let invalid): invalid.description
            case .payload(let violation): violation.description
            case .schedule(let days):
                "field \"sendAt\" is \(String(format: "%.1f", days)) days ahead: the hub keeps a scheduled notification at most 7"
            }
        }
    }

    /// A `sendAt` less than this far ahead (seconds) is sent now: a time the hub reads as past is refused.
    public static let scheduleLead = NotificationHubClient.scheduleLead
    /// How far ahead the hub schedules (seconds).
    public static let scheduleHorizon = 7 * 86_400.0

    /// One send per platform and audience expression (a long `users` list becomes several),
    /// before anything touches the network: an invalid tag expression or a native payload that
    /// breaks its platform's rules refuses the whole item, so that nothing of it goes out and a
    /// replay of the fixed item sends each platform once.
    ///
    /// An item whose `sendAt` is at least `scheduleLead` ahead of `now` is scheduled at the hub
    /// (more than 7 days ahead refuses it). `expiresAt` bounds the native notifications' time to
    /// live; `audience` and `platform` (a replay of one failed send) keep only that send.
    public static func plan(
        _ item: NewsItem,
        category: String,
        priority: Priority = .normal,
        expiresAt: Double? = nil,
        now: Double = Date().timeIntervalSince1970,
        audience: String? = nil,
        platform: String? = nil
    ) throws(Refusal) -> [PlannedSend] {
        var scheduledAt: Double?
        if let sendAt = item.sendAt?.epochSeconds, sendAt - now >= scheduleLead {
            guard sendAt - now <= scheduleHorizon else { throw .schedule(daysAhead: (sendAt - now) / 86_400) }
            scheduledAt = sendAt
        }
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
        // A scheduled notification's time to live counts from when the hub sends it.
        let context = NativeRendering.Context(
            category: category,
            priority: priority,
            expiresAt: expiresAt,
            now: scheduledAt ?? now
        )
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
                sends.append(
                    PlannedSend(tagExpression: expression, notification: notification, scheduledAt: scheduledAt)
                )
            }
        }
        return sends
    }
}
