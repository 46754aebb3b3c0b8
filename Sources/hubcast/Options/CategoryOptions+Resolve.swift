import News
import Foundation
import NotificationHubs

extension CategoryOptions {
    func resolve(_ settings: Settings) throws(CLIError) -> Categories {
        let names = settings.string(categories, "categories").map {
            $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        } ?? Categories.seedNames
        let mapEntries = topicMap.isEmpty ? (settings.string(nil, "topic-map")?.split(separator: ",").map(String.init) ?? []) : topicMap
        var overrides: [String: String] = [:]
        for entry in mapEntries {
            let parts = entry.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw .usage("--topic-map: expected Category=topic, got \(LegibleText.quoted(entry))")
            }
            overrides[parts[0]] = parts[1]
        }
        do {
            return try Categories(names: names, prefix: settings.string(topicPrefix, "topic-prefix", default: "news."), overrides: overrides)
        } catch {
            throw .usage("--categories", error)
        }
    }
}
