import Foundation
import Kafka
import News
import NotificationHubs

extension Pipeline {
    /// What one message needs.
    enum Preparation {
        /// Nothing to send: expired or a duplicate.
        case done
        case deadLetter(DeadLetterRecord)
        case send(NewsItem, category: String, [PlannedSend])
    }

    /// Decode, validate, drop expired and duplicate items, plan the sends. Nothing here blocks.
    func prepare(_ message: KafkaMessage) -> Preparation {
        let category = configuration.categories.category(forTopic: message.topic)
        let item: NewsItem
        do {
            item = try decoder.decode(message.value, topicCategory: category)
        } catch {
            return invalid(message, error.description, itemID: nil, category: category)
        }
        guard let category = category ?? item.category else {
            return invalid(message, "topic \(message.topic) maps to no category", itemID: item.id, category: nil)
        }
        if item.isExpired(atEpochSeconds: clock()) {
            metrics.expired.increment()
            return .done
        }
        let sends: [PlannedSend]
        do {
            sends = try SendPlanner.plan(item, category: category)
        } catch {
            return invalid(message, error.description, itemID: item.id, category: category)
        }
        guard state.firstSighting(of: item.id) else {
            metrics.duplicates.increment()
            return .done
        }
        return .send(item, category: category, sends)
    }

    private func invalid(_ message: KafkaMessage, _ error: String, itemID: String?, category: String?) -> Preparation {
        metrics.invalid.increment()
        logger.warning("Invalid news item", metadata: ["topic": "\(message.topic)", "partition": "\(message.partition)",
                                                        "offset": "\(message.offset)", "error": "\(error)"])
        return .deadLetter(DeadLetterRecord(reason: FailureReason.invalid.name, error: error, message: message.value, itemID: itemID,
                                            category: category, source: message))
    }

    /// One send through the client (which retries); the outcome is counted, failures dead-lettered.
    ///
    /// A hub that does not answer at all (connection refused, timeouts) is an outage, not a verdict
    /// on this item: the send holds its slot and tries again until the hub is back, so the pool
    /// fills, the consumer pauses its partitions, and nothing is dead-lettered for it.
    func deliver(_ send: PlannedSend, item: NewsItem, category: String, message: KafkaMessage, key: PipelineState.ItemKey) async {
        do {
            let result = try await sendHoldingThroughOutages(send)
            gate.release(succeeded: true)
            metrics.concurrency.set(gate.limit)
            metrics.sent.increment()
            metrics.retried.increment(by: result.attempts - 1)
            metrics.throttled.increment(by: result.throttledAttempts)
            metrics.sendLatency.recordNanoseconds(Int64(result.latency.components.seconds) * 1_000_000_000 + result.latency.components.attoseconds / 1_000_000_000)
            if let produced = message.timestampMs {
                metrics.recordEndToEnd(category: category, milliseconds: max(0, Int64(clock() * 1000) - produced))
            }
            state.sendEnded(key)
            metrics.inFlight.set(state.inFlight)
        } catch {
            gate.release(succeeded: false)
            if error.reason.name == "cancelled" || error.reason.name == "shut-down" {
                // Abandoned at shutdown: the item stays unfinished and is read again after restart.
                return
            }
            metrics.failed.increment()
            metrics.retried.increment(by: max(0, error.attempts - 1))
            metrics.throttled.increment(by: error.throttledAttempts)
            logger.error("Send failed", metadata: ["itemId": "\(item.id)", "audience": "\(send.tagExpression)",
                                                    "reason": "\(error.reason)", "status": "\(error.status.map(String.init) ?? "-")",
                                                    "attempts": "\(error.attempts)", "error": "\(error.message)"])
            let record = DeadLetterRecord(
                reason: error.reason.name, error: error.message, status: error.status, attempts: error.attempts, message: message.value,
                itemID: item.id, category: category, audience: send.tagExpression, source: message,
                firstAttemptAt: error.firstAttemptAt, lastAttemptAt: error.lastAttemptAt)
            await deadLetter(record, key: key)
        }
    }

    private func sendHoldingThroughOutages(_ send: PlannedSend) async throws(SendFailure) -> SendResult {
        while true {
            do {
                return try await client.sendTemplate(properties: send.properties, tagExpression: send.tagExpression)
            } catch where error.status == nil && (error.reason == .transport || error.reason == .timeout) {
                metrics.retried.increment(by: error.attempts)
                outageLog.warn(logger, error)
                do {
                    try await Task.sleep(for: configuration.outageRetryInterval)
                } catch {
                    throw SendFailure(reason: .init("cancelled"), status: nil, message: "cancelled during a hub outage", attempts: 0,
                                      throttledAttempts: 0, firstAttemptAt: 0, lastAttemptAt: 0)
                }
            }
        }
    }

    /// Stores a record in the dead-letter sink, retrying a few times; if the sink keeps failing the
    /// item is marked stuck so that its offset is never committed.
    func deadLetter(_ record: DeadLetterRecord, key: PipelineState.ItemKey) async {
        for attempt in 1...5 {
            do {
                try await deadLetters.write(record)
                metrics.deadLettered.increment()
                state.sendEnded(key)
                return
            } catch {
                logger.error("Dead-letter write failed", metadata: ["attempt": "\(attempt)", "error": "\(error)"])
                try? await Task.sleep(for: .milliseconds(100 << attempt))
            }
        }
        state.markStuck(key)
        state.sendEnded(key)
    }
}
