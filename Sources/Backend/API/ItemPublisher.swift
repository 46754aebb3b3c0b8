import News
import Newsroom

/// Where the backend's notifications go: to Kafka, so they take the pipeline's one send path
/// (retries, dead letters, metrics) like every other item.
public protocol ItemPublisher: Sendable {
    func publish(_ item: NewsItem) async throws(NewsPublisher.PublishFailed)
}

extension NewsPublisher: ItemPublisher {}
