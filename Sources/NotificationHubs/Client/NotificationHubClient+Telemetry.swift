/// What the hub says it did with one accepted notification (per-message telemetry, Standard tier).
public struct NotificationDetails: Sendable, Equatable {
    /// `Enqueued`, `Processing`, `Completed`, `NoTargetFound`, `Abandoned`, `Canceled`, `Scheduled` or `Unknown`.
    public var state: String
    /// Each platform's outcome counts in the order the hub wrote them: the platform as the element
    /// names it (`Apns`, `FcmV1`, `Wns`, …, from `<ApnsOutcomeCounts>`), then its outcomes as
    /// (name, count); `Success` is a device the platform service took.
    public var platforms: [(platform: String, outcomes: [(name: String, count: Int)])]

    /// Every platform's outcomes in one list.
    public var outcomes: [(name: String, count: Int)] { platforms.flatMap(\.outcomes) }

    public init(state: String, platforms: [(platform: String, outcomes: [(name: String, count: Int)])] = []) {
        self.state = state
        self.platforms = platforms
    }

    /// Devices the platform services took, every platform together.
    public var successes: Int { outcomes.filter { $0.name == "Success" }.reduce(0) { $0 + $1.count } }

    /// True once the hub has finished with it: nothing more will change.
    public var isFinal: Bool { !["Enqueued", "Processing", "Scheduled", "Unknown"].contains(state) }

    public static func == (a: Self, b: Self) -> Bool {
        a.state == b.state
            && a.platforms.elementsEqual(b.platforms) { x, y in
                x.platform == y.platform
                    && x.outcomes.elementsEqual(y.outcomes) { $0.name == $1.name && $0.count == $1.count }
            }
    }

    /// Reads a `NotificationDetails` document; nil when it has no `<State>`.
    public init?(xml: String) {
        guard let state = XMLText.text(of: "State", in: xml) else { return nil }
        self.state = state
        platforms = []
        // `<{Platform}OutcomeCounts>` elements, each a flat list of
        // `<Outcome><Name>…</Name><Count>…</Count></Outcome>`: nothing nests deeper, so a scan serves.
        var rest = Substring(xml)
        while let open = rest.range(of: "OutcomeCounts>") {
            let before = rest[..<open.lowerBound]
            guard let lt = before.lastIndex(of: "<"),
                before[before.index(after: lt)...].allSatisfy({ $0.isLetter || $0.isNumber })
            else {
                rest = rest[open.upperBound...]
                continue
            }
            let platform = String(before[before.index(after: lt)...])
            let end = rest.range(of: "</\(platform)OutcomeCounts>", range: open.upperBound..<rest.endIndex)
            let body = rest[open.upperBound..<(end?.lowerBound ?? rest.endIndex)]
            platforms.append((platform, Self.outcomes(in: body)))
            rest = end.map { rest[$0.upperBound...] } ?? rest[rest.endIndex...]
        }
    }

    private static func outcomes(in element: Substring) -> [(name: String, count: Int)] {
        var outcomes: [(name: String, count: Int)] = []
        var rest = element
        while let open = rest.range(of: "<Outcome>"),
            let close = rest.range(of: "</Outcome>", range: open.upperBound..<rest.endIndex)
        {
            let outcome = String(rest[open.upperBound..<close.lowerBound])
            if let name = XMLText.text(of: "Name", in: outcome),
                let count = XMLText.text(of: "Count", in: outcome).flatMap({ Int($0) })
            {
                outcomes.append((name, count))
            }
            rest = rest[close.upperBound...]
        }
        return outcomes
    }
}

extension NotificationHubClient {
    /// `GET /{hub}/messages/{id}`: the notification's telemetry. Throws with status 404 until the
    /// hub has any, and 403 on a hub below the Standard tier.
    public func notificationDetails(id: String) async throws(SendFailure) -> NotificationDetails {
        let (response, _, _) = try await perform(request(.get, "messages/\(PercentEncoding.encode(id))"))
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
