import Kafka
import Logging
import News
import NotificationHubs

/// Validates news items and publishes each to its category's topic, keyed by item id.
public struct NewsPublisher: Sendable {
    /// Counts for the closing summary.
    public struct Summary: Sendable, Equatable {
        public var sent = 0
        public var rejected = 0
        public var failed = 0
        public init() {}
    }

    /// A line that was not published, and why.
    public struct Problem: Sendable, CustomStringConvertible {
        public let line: Int
        public let reason: String
        public var description: String { "line \(line): \(reason)" }
    }

    let producer: KafkaProducer
    let categories: Categories
    let decoder: NewsItemDecoder
    /// Category for items that carry none.
    let defaultCategory: String?
    /// Deliveries awaited at once; bounds memory on large files.
    let maxInFlight: Int

    public init(
        producer: KafkaProducer,
        categories: Categories,
        decoder: NewsItemDecoder = NewsItemDecoder(),
        defaultCategory: String? = nil,
        maxInFlight: Int = 10_000
    ) {
        self.producer = producer
        self.categories = categories
        self.decoder = decoder
        self.defaultCategory = defaultCategory
        self.maxInFlight = maxInFlight
    }

    /// Looks every category's topic up now, so that no category's first item waits while
    /// librdkafka does (940 ms on the dev broker); returns the topics the cluster does not have.
    public func prepareTopics(timeout: Duration = .seconds(10)) async throws(KafkaError) -> [String] {
        var missing: [String] = []
        for topic in categories.topics where try await producer.partitionCount(topic: topic, timeout: timeout) == nil {
            missing.append(topic)
        }
        return missing
    }

    /// Publishes every valid line; a bad line is reported and never stops its neighbours.
    public func publish(from reader: LineReader, onProblem: @escaping @Sendable (Problem) -> Void) async -> Summary {
        var summary = Summary()
        await withTaskGroup(of: Problem?.self) { group in
            var inFlight = 0
            while true {
                let lines = await reader.next()
                if lines.isEmpty { break }
                for line in lines where !line.bytes.allSatisfy(Self.isSpace) {
                    let route: Route
                    do throws(NewsItemError) {
                        route = try self.route(line.bytes)
                    } catch {
                        summary.rejected += 1
                        onProblem(Problem(line: line.number, reason: error.description))
                        continue
                    }
                    if inFlight >= maxInFlight, let done = await group.next() {
                        inFlight -= 1
                        summary.record(done, onProblem)
                    }
                    inFlight += 1
                    group.addTask { await self.send(line, via: route) }
                }
            }
            for await done in group { summary.record(done, onProblem) }
        }
        return summary
    }

    /// Where a valid item goes: its category's topic, keyed by its id so one item stays in one partition.
    public struct Route: Sendable {
        public let topic: String
        public let key: [UInt8]
    }

    /// Validates one message and picks its topic.
    public func route(_ bytes: [UInt8]) throws(NewsItemError) -> Route {
        let item = try decoder.decode(bytes)
        guard let category = item.category ?? defaultCategory else {
            throw NewsItemError(
                kind: .schema,
                field: "category",
                reason: "is missing and no --category was given, so there is no topic to publish to"
            )
        }
        guard let topic = categories.topic(for: category) else {
            throw NewsItemError(
                kind: .schema,
                field: "category",
                reason: "is \"\(category)\", which is not one of \(categories.names.joined(separator: ", "))"
            )
        }
        // The audience is checked as `hubcast run` will check it, so an item the pipeline would
        // dead-letter (a malformed or crafted `tagExpression`) never reaches the topic.
        do throws(TagExpression.Invalid) {
            _ = try Audience(users: item.users, expression: item.tagExpression, orTag: category)
        } catch {
            throw NewsItemError(kind: .schema, field: "tagExpression", reason: error.detail)
        }
        return Route(topic: topic, key: Array(item.id.utf8))
    }

    private func send(_ line: LineReader.Line, via route: Route) async -> Problem? {
        do {
            _ = try await producer.send(
                topic: route.topic,
                key: route.key,
                value: line.bytes,
                headers: [KafkaHeader(name: "content-type", value: Array("application/json".utf8))]
            )
            return nil
        } catch {
            return Problem(line: line.number, reason: "delivery to \(route.topic) failed: \(error)")
        }
    }

    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
}

extension NewsPublisher.Summary {
    mutating func record(_ problem: NewsPublisher.Problem?, _ onProblem: (NewsPublisher.Problem) -> Void) {
        if let problem {
            failed += 1
            onProblem(problem)
        } else {
            sent += 1
        }
    }
}
