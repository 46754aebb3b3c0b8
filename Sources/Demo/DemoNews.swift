import News

/// The demo's breaking news: a few items per category (World's second is `breaking`, as the first
/// pays for the consumer's start-up; Sports' are `bulk`), one for named users, one invalid, one expired.
enum DemoNews {
    static let headlines: [String: [String]] = [
        "World": [
            "Earthquake of magnitude 6.1 strikes off the coast", "Ceasefire agreed after overnight talks",
            "Record heat across three continents",
        ],
        "Politics": [
            "Parliament passes the budget after all-night session", "Snap election called for spring",
            "Minister resigns over leaked memo",
        ],
        "Business": [
            "Central bank holds rates steady", "Chipmaker shares jump 12% on earnings",
            "Airline merger cleared by regulators",
        ],
        "Technology": [
            "New battery chemistry doubles phone life", "Open-source model tops reasoning benchmark",
            "Undersea cable restored after outage",
        ],
        "Science": [
            "Probe lands on comet", "Telescope spots water vapour on exoplanet",
            "Ancient genome rewrites migration map",
        ],
        "Sports": [
            "Underdogs win the final on penalties", "Marathon world record falls in Berlin",
            "Star striker signs record contract",
        ],
    ]

    /// (topic, message value) pairs, and how many of them are valid and current.
    static func messages(categories: Categories) -> (messages: [(topic: String, value: [UInt8])], valid: [String: Int])
    {
        var messages: [(String, [UInt8])] = []
        var valid: [String: Int] = [:]
        var n = 0
        for category in categories.names {
            guard let topic = categories.topic(for: category) else { continue }
            for (k, headline) in (headlines[category] ?? ["\(category) update"]).enumerated() {
                n += 1
                let priority: Priority? = category == "World" && k == 1 ? .breaking : category == "Sports" ? .bulk : nil
                let item = NewsItem(
                    id: "demo-\(n)",
                    headline: headline,
                    category: category,
                    url: "https://news.example/\(n)",
                    priority: priority
                )
                messages.append((topic, item.json))
                valid[category, default: 0] += 1
            }
        }
        if let topic = categories.topic(for: categories.names[0]) {
            let personal = NewsItem(
                id: "demo-users",
                headline: "Your followed team just scored",
                users: ["user1", "user2", "user3"]
            )
            messages.append((topic, personal.json))
            valid["(users)", default: 0] += 1
            messages.append((topic, Array(#"{"id":"demo-invalid","category":"\#(categories.names[0])"}"#.utf8)))
            let expired = NewsItem(
                id: "demo-expired",
                headline: "Yesterday's storm warning",
                expiresAt: Timestamp(rfc3339: "2020-01-01T00:00:00Z")
            )
            messages.append((topic, expired.json))
        }
        return (messages, valid)
    }
}
