import Kafka
import News

extension NewsPublisher {
    /// A publish that did not reach Kafka; safe to log (no item content).
    public struct PublishFailed: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Validates one item as `hubcast run` will, and publishes it to its category's topic, awaiting the
    /// delivery report (the app backend's `POST /api/notifications`).
    public func publish(_ item: NewsItem) async throws(PublishFailed) {
        let bytes = item.json
        let route: Route
        do {
            route = try self.route(bytes)
        } catch {
            throw PublishFailed(description: "invalid item: \(error.kind)")
        }
        do {
            _ = try await producer.send(
                topic: route.topic,
                key: route.key,
                value: bytes,
                headers: [KafkaHeader(name: "content-type", value: Array("application/json".utf8))]
            )
        } catch {
            throw PublishFailed(description: "delivery to \(route.topic) failed: \(error)")
        }
    }
}
