import Foundation
import News
import NotificationHubs

extension CategoryOptions {
    func resolve(_ settings: Settings) throws(CLIError) -> Categories {
        let names =
            settings.string(categories, "categories").map {
                $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            } ?? Categories.seedNames
        var overrides: [String: String] = [:]
        for pair in try settings.pairs(topicMap, "topic-map", shape: "Category=topic") {
            overrides[pair.key] = pair.value
        }
        do {
            return try Categories(
                names: names,
                prefix: settings.string(topicPrefix, "topic-prefix", default: "news."),
                overrides: overrides
            )
        } catch {
            throw .usage("--categories", error)
        }
    }
}
