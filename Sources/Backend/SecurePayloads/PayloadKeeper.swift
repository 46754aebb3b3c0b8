import Foundation
import Kafka
import Logging
import News
import NotificationHubs
import ServiceLifecycle

/// Keeps the payloads of secure items a newsroom publishes straight to Kafka, so the pipeline can send
/// id-only pushes without the backend in its path. Its own consumer group reads the category topics;
/// an offset is committed only after the payloads at or below it are stored (at-least-once; storing
/// twice is harmless: the first write wins). A device that asks before its payload is stored gets 404
/// and retries.
public struct PayloadKeeper: Service, CustomStringConvertible {
    public var description: String { "PayloadKeeper" }

    let consumer: KafkaConsumer
    let store: any PayloadStore
    let categories: Categories
    let decoder = NewsItemDecoder()
    let defaultTTL: Int64
    let logger: Logger

    public init(
        consumer: KafkaConsumer,
        store: any PayloadStore,
        categories: Categories,
        defaultTTL: Int64,
        logger: Logger
    ) {
        self.consumer = consumer
        self.store = store
        self.categories = categories
        self.defaultTTL = defaultTTL
        self.logger = logger
    }

    public func run() async throws {
        let messages = consumer.messages
        var pending: [TopicPartition: Int64] = [:]
        var lastCommit = ContinuousClock.now
        while true {
            switch await messages.nextBatch(max: 500, timeout: .milliseconds(500)) {
            case .finished:
                await commit(&pending)
                return
            case .timedOut:
                break
            case .batch(let batch):
                for message in batch {
                    await keep(message)
                    pending[message.topicPartition] = message.offset + 1
                }
            }
            if !pending.isEmpty && ContinuousClock.now - lastCommit >= .seconds(1) {
                await commit(&pending)
                lastCommit = ContinuousClock.now
            }
            if Task.isCancelled || Task.isShuttingDownGracefully {
                await commit(&pending)
                return
            }
        }
    }

    /// Stores a secure item's payload; everything else is the pipeline's business, not ours.
    func keep(_ message: KafkaMessage) async {
        let category = categories.category(forTopic: message.topic)
        guard let item = try? decoder.decode(message.value, topicCategory: category), item.secure else { return }
        guard
            let payload = Self.payload(
                of: item,
                category: category,
                defaultExpiry: Int64(Date().timeIntervalSince1970) + defaultTTL
            )
        else { return }
        // A store that fails now is retried a few times; the item is at-least-once either way: its
        // offset is committed regardless, and the device's fetch then answers 404 (logged here).
        for attempt in 1...3 {
            do {
                _ = try await store.insertPayload(payload)
                return
            } catch {
                if attempt == 3 {
                    logger.error(
                        "Could not store a secure payload",
                        metadata: ["error": "\(error.description)", "topic": "\(message.topic)"]
                    )
                }
                try? await Task.sleep(for: .milliseconds(200 * attempt))
            }
        }
    }

    /// What the backend keeps of a secure item: headline as `Payload`, its body and url, its audience.
    static func payload(of item: NewsItem, category: String?, defaultExpiry: Int64) -> SecurePayload? {
        let expiresAt = item.expiresAt.map { Int64($0.epochSeconds) } ?? defaultExpiry
        if let users = item.users {
            return SecurePayload(
                id: item.id,
                users: users,
                tagExpression: nil,
                payload: item.headline,
                body: item.body,
                url: item.url,
                expiresAt: expiresAt
            )
        }
        guard let expression = item.tagExpression ?? category else { return nil }
        return SecurePayload(
            id: item.id,
            users: nil,
            tagExpression: expression,
            payload: item.headline,
            body: item.body,
            url: item.url,
            expiresAt: expiresAt
        )
    }

    private func commit(_ pending: inout [TopicPartition: Int64]) async {
        guard !pending.isEmpty else { return }
        do {
            try await consumer.commit(pending.map { TopicPartitionOffset($0.key, offset: $0.value) })
            pending.removeAll()
        } catch {
            logger.warning("Offset commit failed; will retry", metadata: ["error": "\(error)"])
        }
    }
}

/// Deletes expired payloads once a minute.
public struct PayloadSweeper: Service, CustomStringConvertible {
    public var description: String { "PayloadSweeper" }

    let store: any PayloadStore
    let logger: Logger
    let interval: Duration

    public init(store: any PayloadStore, logger: Logger, interval: Duration = .seconds(60)) {
        self.store = store
        self.logger = logger
        self.interval = interval
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                let removed = try await store.deleteExpiredPayloads(now: Int64(Date().timeIntervalSince1970))
                if removed > 0 { logger.debug("Expired payloads removed", metadata: ["count": "\(removed)"]) }
            } catch {
                logger.warning("Sweeping expired payloads failed", metadata: ["error": "\(error.description)"])
            }
            let interval = self.interval
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }
}
