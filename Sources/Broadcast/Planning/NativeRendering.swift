import News
import NotificationHubs
import TextFormats

/// A news item's notification for one push service: rendered from its headline, or the
/// newsroom's own payload, with the headers that platform reads. Linting is the caller's.
///
/// Renderings (docs/platforms.md shows each): the title is `Breaking <Category> News` and the body
/// the headline, as the template sends' `messageParam` says it; the item's id, category, url and
/// own properties ride along as data. A secure item carries the title and its id only.
enum NativeRendering {
    /// What the headers and time-to-live come from.
    struct Context {
        let category: String
        let priority: Priority
        /// Epoch seconds after which the item is not worth showing; nil: no bound.
        let expiresAt: Double?
        let now: Double
    }

    static func notification(
        for item: NewsItem,
        on platform: NativePlatform,
        _ context: Context
    ) -> NativeNotification {
        switch platform {
        case .apple: apple(item, context)
        case .fcmv1: fcmv1(item, context)
        case .windows: windows(item, context)
        }
    }

    static func title(_ context: Context) -> String { "Breaking \(context.category) News" }

    /// The data every rendering carries besides title and body, in a stable order.
    static func data(_ item: NewsItem, _ context: Context, excluding reserved: Set<String>) -> [(String, String)] {
        var data: [(String, String)] = [("id", item.id), ("category", context.category)]
        if item.secure {
            data.append(("secure", "true"))
            return data
        }
        if let url = item.url { data.append(("url", url)) }
        for (name, value) in item.properties.sorted(by: { $0.key < $1.key }) {
            let lower = name.lowercased()
            guard !TemplateProperties.reserved.contains(lower), !reserved.contains(lower) else { continue }
            data.append((name, value))
        }
        return data
    }

    // MARK: APNs

    private static func apple(_ item: NewsItem, _ context: Context) -> NativeNotification {
        let payload: [UInt8]
        var pushType = "alert"
        if case .json(let explicit)? = item.notifications[.apple] {
            payload = JSONWriter.bytes(of: explicit)
            // A payload that shows nothing and asks to wake the app is a background push.
            if case .object(let root) = explicit, case .object(let aps)? = root["aps"],
                aps["alert"] == nil, aps["badge"] == nil, aps["sound"] == nil, aps["content-available"] == .number(1)
            {
                pushType = "background"
            }
        } else {
            var w = JSONWriter(reservingCapacity: 256 + item.headline.utf8.count)
            w.beginObject()
            w.key("aps")
            w.beginObject()
            w.key("alert")
            w.beginObject()
            w.member("title", title(context))
            if !item.secure { w.member("body", item.headline) }
            w.endObject()
            w.member("sound", "default")
            w.endObject()
            // APNs reserves only "aps"; the rest is the app's.
            for (name, value) in data(item, context, excluding: ["aps"]) { w.member(name, value) }
            w.endObject()
            payload = w.bytes
        }
        // 10 shows it now; 5 lets the device choose its moment (and is the only one a background push may have).
        let apnsPriority = pushType == "background" || context.priority == .bulk ? "5" : "10"
        var headers = [HTTPHeader("apns-push-type", pushType), HTTPHeader("apns-priority", apnsPriority)]
        if let expiresAt = context.expiresAt {
            headers.append(HTTPHeader("apns-expiration", String(Int64(expiresAt.rounded(.down)))))
        }
        return NativeNotification(platform: .apple, payload: payload, headers: headers)
    }

    // MARK: FCM v1

    /// Data keys FCM refuses (its own), besides those starting with `google` or `gcm`.
    static let fcmReserved: Set<String> = ["from", "message_type", "notification"]

    private static func fcmv1(_ item: NewsItem, _ context: Context) -> NativeNotification {
        if case .json(let explicit)? = item.notifications[.fcmv1] {
            return NativeNotification(platform: .fcmv1, payload: JSONWriter.bytes(of: explicit))
        }
        var w = JSONWriter(reservingCapacity: 256 + item.headline.utf8.count)
        w.beginObject()
        w.key("message")
        w.beginObject()
        w.key("notification")
        w.beginObject()
        w.member("title", title(context))
        if !item.secure {
            w.member("body", item.headline)
            w.member("image", item.imageUrl)
        }
        w.endObject()
        w.key("data")
        w.beginObject()
        for (name, value) in data(item, context, excluding: fcmReserved)
        where !name.lowercased().hasPrefix("google") && !name.lowercased().hasPrefix("gcm") {
            w.member(name, value)
        }
        w.endObject()
        w.key("android")
        w.beginObject()
        w.member("priority", context.priority == .bulk ? "NORMAL" : "HIGH")
        if let expiresAt = context.expiresAt {
            w.member("ttl", "\(max(0, Int64((expiresAt - context.now).rounded(.down))))s")
        }
        w.endObject()
        w.endObject()
        w.endObject()
        return NativeNotification(platform: .fcmv1, payload: w.bytes)
    }

    // MARK: WNS

    private static func windows(_ item: NewsItem, _ context: Context) -> NativeNotification {
        let xml: String
        if case .xml(let explicit)? = item.notifications[.windows] {
            xml = explicit
        } else {
            let body = item.secure ? "" : "<text>\(XMLText.escape(item.headline))</text>"
            xml =
                "<toast launch=\"\(XMLText.escape("id=" + item.id))\"><visual><binding template=\"ToastGeneric\">"
                + "<text>\(XMLText.escape(title(context)))</text>\(body)</binding></visual></toast>"
        }
        let payload = Array(xml.utf8)
        // The type follows the root; an unknown or unreadable root is left to the lint to name.
        let root = try? XMLShape.rootElement(of: payload)
        let type = ["toast", "tile", "badge"].contains(root ?? "") ? "wns/\(root ?? "")" : "wns/toast"
        return NativeNotification(platform: .windows, payload: payload, headers: [HTTPHeader("X-WNS-Type", type)])
    }
}
