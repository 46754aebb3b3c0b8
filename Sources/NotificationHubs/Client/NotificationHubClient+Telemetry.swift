/// What the hub says it did with one accepted notification (per-message telemetry, Standard tier).
public struct NotificationDetails: Sendable, Equatable {
    /// `Enqueued`, `Processing`, `Completed`, `NoTargetFound`, `Abandoned`, `Canceled`, `Scheduled` or `Unknown`.
    public var state: String
    /// Every `<Outcome>` of every platform's outcome counts, as (name, count): `Success` is a
    /// device the platform service took.
    public var outcomes: [(name: String, count: Int)]

    public init(state: String, outcomes: [(name: String, count: Int)] = []) {
        self.state = state
        self.outcomes = outcomes
    }

    /// Devices the platform services took, every platform together.
    public var successes: Int { outcomes.filter { $0.name == "Success" }.reduce(0) { $0 + $1.count } }

    /// True once the hub has finished with it: nothing more will change.
    public var isFinal: Bool { !["Enqueued", "Processing", "Scheduled", "Unknown"].contains(state) }

    public static func == (a: Self, b: Self) -> Bool {
        a.state == b.state && a.outcomes.elementsEqual(b.outcomes) { $0.name == $1.name && $0.count == $1.count }
    }

    /// Reads a `NotificationDetails` document; nil when it has no `<State>`.
    public init?(xml: String) {
        guard let state = XMLText.text(of: "State", in: xml) else { return nil }
        self.state = state
        outcomes = []
        var rest = Substring(xml)
        // Flat elements, one level deep: `<Outcome><Name>…</Name><Count>…</Count></Outcome>`.
        while let open = rest.range(of: "<Outcome>"),
            let close = rest.range(of: "</Outcome>", range: open.upperBound..<rest.endIndex)
        {
            let element = String(rest[open.upperBound..<close.lowerBound])
            if let name = XMLText.text(of: "Name", in: element),
                let count = XMLText.text(of: "Count", in: element).flatMap({ Int($0) })
            {
                outcomes.append((name, count))
            }
            rest = rest[close.upperBound...]
        }
    }
}

extension NotificationHubClient {
    /// `GET /{hub}/messages/{id}`: the notification's telemetry. Throws with status 404 until the
    /// hub has any, and 403 on a hub below the Standard tier.
    public func notificationDetails(id: String) async throws(SendFailure) -> NotificationDetails {
        let request = HTTPRequest(
            method: .get,
            url: configuration.url("messages/\(PercentEncoding.encode(id))"),
            headers: [],
            body: [],
            timeout: configuration.requestTimeout
        )
        let (response, _, _) = try await perform(request)
        guard let details = NotificationDetails(xml: String(decoding: response.body, as: UTF8.self)) else {
            throw SendFailure(
                reason: .rejected,
                status: response.status,
                message: "the hub's answer is not a NotificationDetails document",
                attempts: 1,
                throttledAttempts: 0,
                firstAttemptAt: 0,
                lastAttemptAt: 0
            )
        }
        return details
    }
}
