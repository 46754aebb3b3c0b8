import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Kafka

/// The Kafka module against a real `hubcast dev-broker` process.
@Suite(.serialized) struct ConsumerGroupTests {
    let broker: DevBrokerProcess
    let topic = "news.world"

    init() async throws {
        broker = try await DevBrokerProcess(partitions: 3)
    }

    @Test func aClosedConsumerThrowsInsteadOfTouchingItsHandle() async throws {
        try await KafkaTestKit.produce(10, topic: topic, bootstrap: broker.bootstrap)
        let config = KafkaTestKit.consumerConfiguration(broker.bootstrap, group: "closed", topics: [topic])
        let consumer = try KafkaConsumer(configuration: config, logger: KafkaTestKit.logger)
        let taken = try await KafkaTestKit.withRunning(consumer) { messages in
            await KafkaTestKit.take(10, from: messages)
        }
        #expect(taken.count == 10)
        // run() has returned: the group was left and the handle destroyed. Each call says so, in
        // the consumer's own words, before reaching the handle.
        let closed: (KafkaError) -> Bool = { $0.isWrongState && $0.description.hasSuffix("while closed") }
        await #expect(
            performing: { try await consumer.commit(KafkaTestKit.nextOffsets(taken)) },
            throws: { error in
                (error as? KafkaError).map(closed) == true
            }
        )
        await #expect(
            performing: { _ = try await consumer.committed([TopicPartition(topic: topic, partition: 0)]) },
            throws: { error in (error as? KafkaError).map(closed) == true }
        )
        await #expect(
            performing: { try await consumer.checkReachable(timeout: .seconds(1)) },
            throws: { error in
                (error as? KafkaError).map(closed) == true
            }
        )
        #expect(consumer.lag == 0)
    }

    /// `count` messages read by a consumer of its own, their offsets committed, and the consumer
    /// closed (it leaves the group).
    static func readAndCommit(_ count: Int, _ config: KafkaConsumerConfiguration) async throws -> [KafkaMessage] {
        let consumer = try KafkaConsumer(configuration: config, logger: KafkaTestKit.logger)
        return try await KafkaTestKit.withRunning(consumer) { messages in
            let taken = await KafkaTestKit.take(count, from: messages)
            try await consumer.commit(KafkaTestKit.nextOffsets(taken))
            return taken
        }
    }

    /// A partition read to its end before it was assigned here has no message left to consume, so
    /// librdkafka never knows a position for it: its lag counts from its committed offset, not from
    /// its first (all of its history, for a quiet category, after every rebalance or restart).
    @Test func aPartitionReadToItsEndBeforeItsAssignmentHasNoLag() async throws {
        try await KafkaTestKit.produce(300, topic: topic, bootstrap: broker.bootstrap)
        let config = KafkaTestKit.consumerConfiguration(broker.bootstrap, group: "lag", topics: [topic])
        let read = try await Self.readAndCommit(300, config)
        #expect(read.count == 300)
        #expect(Set(read.map(\.partition)).count == 3)

        // One new message, in one partition: once it is read, the one fetch that brought it told
        // every partition's end (one broker), and the other two have nothing to read.
        try await KafkaTestKit.produce(1, topic: topic, bootstrap: broker.bootstrap, from: 300)
        let second = try KafkaConsumer(configuration: config, logger: KafkaTestKit.logger)
        let lag = try await KafkaTestKit.withRunning(second) { messages in
            let taken = await KafkaTestKit.take(1, from: messages)
            #expect(taken.map { String(decoding: $0.value, as: UTF8.self) } == ["300"])
            #expect(second.assignment.count == 3)
            return second.lag
        }
        #expect(lag == 0)
    }

    @Test func restartResumesExactlyAfterTheCommittedOffsets() async throws {
        try await KafkaTestKit.produce(1000, topic: topic, bootstrap: broker.bootstrap)
        let config = KafkaTestKit.consumerConfiguration(broker.bootstrap, group: "resume", topics: [topic])

        let processed = try await Self.readAndCommit(400, config)
        #expect(processed.count == 400)
        let committed = Dictionary(
            uniqueKeysWithValues: KafkaTestKit.nextOffsets(processed).map { ($0.topicPartition, $0.offset) }
        )

        let second = try KafkaConsumer(configuration: config, logger: KafkaTestKit.logger)
        let rest = try await KafkaTestKit.withRunning(second) { messages in
            let taken = await KafkaTestKit.take(600, from: messages)
            try await second.commit(KafkaTestKit.nextOffsets(taken))
            return taken
        }
        #expect(rest.count == 600)
        // Nothing committed is read again, and nothing is skipped.
        for m in rest {
            #expect(m.offset >= committed[m.topicPartition] ?? 0, "re-read \(m.topicPartition)@\(m.offset)")
        }
        let firstOffsets = Dictionary(grouping: rest, by: \.topicPartition).mapValues { $0.map(\.offset).min() ?? -1 }
        for (partition, offset) in firstOffsets {
            #expect(offset == committed[partition] ?? 0, "\(partition) resumed at \(offset)")
        }
        let values = Set((processed + rest).map { String(decoding: $0.value, as: UTF8.self) })
        #expect(values == Set((0..<1000).map(String.init)))
        #expect(Set((processed + rest).map(\.partition)).count == 3)
        // At least one partition was stopped part-way, so the resume point really mattered.
        #expect(committed.values.contains { $0 > 0 })
    }

    /// librdkafka's queue kept to 20 messages and the consumer's buffer to 10: the queue fills and
    /// the fetchers stop every few dozen messages, and the poll loop wakes them each time it has
    /// drained (librdkafka would look again only a second later). Nothing is lost or reordered.
    @Test func aShortQueueIsRefilledByWakingTheFetchers() async throws {
        try await KafkaTestKit.produce(3000, topic: topic, bootstrap: broker.bootstrap)
        var config = KafkaTestKit.consumerConfiguration(broker.bootstrap, group: "wake", topics: [topic])
        config.kafka.properties["queued.min.messages"] = "20"
        config.bufferCapacity = 10
        let consumer = try KafkaConsumer(configuration: config, logger: KafkaTestKit.logger)
        let taken = try await KafkaTestKit.withRunning(consumer) { messages in
            await KafkaTestKit.take(3000, from: messages, timeout: .seconds(300))
        }
        #expect(taken.count == 3000)
        #expect(Set(taken.map { String(decoding: $0.value, as: UTF8.self) }) == Set((0..<3000).map(String.init)))
        for (partition, messages) in Dictionary(grouping: taken, by: \.topicPartition) {
            #expect(messages.map(\.offset) == Array(0..<Int64(messages.count)), "\(partition) out of order")
        }
        #expect(consumer.fetchWakeCount > 0)
    }

    /// A flooded topic has filled what librdkafka prefetches (each partition's own queue, 100
    /// messages) and the consumer's full buffer; a quiet topic's message is still fetched at once,
    /// let into the full buffer, and comes out next but one. (One shared queue stopped fetching it
    /// while full, then held it behind every message fetched before it.)
    @Test func aQuietTopicIsFetchedAndTakenBesideAFloodedOne() async throws {
        let flood = "news.sports"
        try await KafkaTestKit.produce(3000, topic: flood, bootstrap: broker.bootstrap)
        var config = KafkaTestKit.consumerConfiguration(broker.bootstrap, group: "quiet", topics: [flood, topic])
        config.bufferCapacity = 10
        // Backpressure must not pause the partitions while the test looks: only the buffer holds.
        config.pauseAfter = .seconds(600)
        let consumer = try KafkaConsumer(configuration: config, logger: KafkaTestKit.logger)
        let floodPartitions = (0..<3).map { TopicPartition(topic: flood, partition: Int32($0)) }
        let bootstrap = broker.bootstrap
        let quietTopic = topic
        let (taken, floodQueued) = try await KafkaTestKit.withRunning(consumer) { messages in
            let full = await waitFor { floodPartitions.allSatisfy { consumer.prefetched($0) >= 100 } }
            #expect(full, "the flooded partitions were not prefetched to their fill")
            let floodQueued = floodPartitions.reduce(0) { $0 + consumer.prefetched($1) }
            try await KafkaTestKit.produce(1, topic: quietTopic, bootstrap: bootstrap, from: 9000)
            let buffered = await waitFor { consumer.bufferedTopics.contains(quietTopic) }
            #expect(buffered, "the quiet topic's message did not reach the full buffer")
            return (await KafkaTestKit.take(30, from: messages), floodQueued)
        }
        #expect(floodQueued >= 300)
        #expect(taken.count == 30)
        // The flood's turn, then the quiet topic's.
        let quiet = taken.firstIndex { $0.topic == topic }
        #expect(
            quiet != nil && quiet! <= 1,
            "the quiet message came out at \(String(describing: quiet)) of \(taken.count)"
        )
    }

    /// A buffer full for longer than `pauseAfter` pauses the partitions; the poll loop then serves
    /// events every millisecond or so, not in a busy loop (it takes nothing while the buffer is
    /// full, so librdkafka's queues, not empty, never wake it).
    @Test func aFullBufferPastPauseAfterDoesNotSpinThePollLoop() async throws {
        try await KafkaTestKit.produce(1000, topic: topic, bootstrap: broker.bootstrap)
        var config = KafkaTestKit.consumerConfiguration(broker.bootstrap, group: "spin", topics: [topic])
        config.bufferCapacity = 10
        config.pauseAfter = .milliseconds(50)
        let consumer = try KafkaConsumer(configuration: config, logger: KafkaTestKit.logger)
        let elapsed = try await KafkaTestKit.withRunning(consumer) { messages in
            let paused = await waitFor { consumer.pausedPartitions.count == 3 }
            #expect(paused, "backpressure did not pause the partitions")
            let start = ContinuousClock.now
            let before = consumer.pollCount
            let turned = await waitFor { consumer.pollCount >= before + 300 }
            #expect(turned, "the poll loop stopped turning")
            let elapsed = ContinuousClock.now - start
            #expect(await KafkaTestKit.take(10, from: messages).count == 10)
            return elapsed
        }
        // A turn that takes nothing waits a millisecond (a few end early, for events): 300 turns
        // take about 300 ms. A busy loop makes them in well under one.
        #expect(elapsed >= .milliseconds(200), "300 turns in \(elapsed)")
    }

    /// Waits for `condition` to hold, looking every 10 ms, 60 s at most; whether it held.
    private func waitFor(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    @Test func twoMembersSplitThePartitionsAndARebalanceLosesNothing() async throws {
        try await KafkaTestKit.produce(1000, topic: topic, bootstrap: broker.bootstrap)
        let config = KafkaTestKit.consumerConfiguration(broker.bootstrap, group: "split", topics: [topic])
        let seen = Mutex<[String: Int]>([:])
        let processedA = Mutex<[KafkaMessage]>([])
        let revokedFromA = Mutex<[TopicPartition]>([])
        // Each member's assignment changes before its `onAssign` runs: the test waits on these.
        let (assignments, assigned) = AsyncStream.makeStream(of: Void.self)

        let a = try KafkaConsumer(
            configuration: config,
            handlers: .init(
                onAssign: { _ in assigned.yield() },
                onRevoke: { partitions in
                    // What A finished on the leaving partitions is committed before they move, where the
                    // broker allows it: the dev broker refuses commits once a rebalance is under way
                    // (REBALANCE_IN_PROGRESS), so the periodic commit below is what the test relies on.
                    revokedFromA.withLock { $0 += partitions }
                    let leaving = Set(partitions)
                    let done = processedA.withLock { $0 }.filter { leaving.contains($0.topicPartition) }
                    return KafkaTestKit.nextOffsets(done)
                }
            ),
            logger: KafkaTestKit.logger
        )
        let b = try KafkaConsumer(
            configuration: config,
            handlers: .init(onAssign: { _ in assigned.yield() }),
            logger: KafkaTestKit.logger
        )

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await a.run() }
            // A alone owns all three partitions and reads a first part.
            let early = await KafkaTestKit.take(300, from: a.messages)
            processedA.withLock { $0 += early }
            try await a.commit(KafkaTestKit.nextOffsets(early))
            #expect(a.assignment.count == 3)

            // B joins: the group rebalances and B gets a share. Waited for until every partition
            // is assigned again: with an eager assignor one member hears of its share before the
            // other, and a moment with B assigned and A not yet was taken for the end (the union
            // then held 2 of 3 partitions).
            group.addTask { try await b.run() }
            let split: @Sendable () -> Bool = {
                !b.assignment.isEmpty && a.assignment.count < 3 && a.assignment.union(b.assignment).count == 3
            }
            let settled = await guarded(timeout: .seconds(60)) {
                for await _ in assignments where split() { return true }
                return false
            }
            #expect(settled, "A \(a.assignment), B \(b.assignment)")
            #expect(!b.assignment.isEmpty)
            #expect(a.assignment.isDisjoint(with: b.assignment))
            #expect(a.assignment.union(b.assignment).count == 3)
            #expect(!revokedFromA.withLock { $0 }.isEmpty)

            // After the move each member reads from the group's committed offsets: together, the rest.
            let lateA = Task { await KafkaTestKit.take(1000, from: a.messages, timeout: .seconds(8)) }
            let lateB = Task { await KafkaTestKit.take(1000, from: b.messages, timeout: .seconds(8)) }
            let fromA = await lateA.value, fromB = await lateB.value
            processedA.withLock { $0 += fromA }
            for m in early + fromA + fromB {
                seen.withLock { $0[String(decoding: m.value, as: UTF8.self), default: 0] += 1 }
            }
            #expect(Set(fromA.map(\.topicPartition)).isDisjoint(with: Set(fromB.map(\.topicPartition))))
            a.stop()
            b.stop()
            try await group.waitForAll()
        }
        let counts = seen.withLock { $0 }
        #expect(Set(counts.keys) == Set((0..<1000).map(String.init)), "lost \(1000 - counts.count)")
        // A committed its work before the move, so nothing it had done is delivered again.
        #expect(counts.values.allSatisfy { $0 == 1 }, "duplicates: \(counts.filter { $0.value > 1 }.count)")
    }

    @Test func pauseHoldsDeliveryWhileTheMemberStaysInItsGroup() async throws {
        var config = KafkaTestKit.consumerConfiguration(broker.bootstrap, group: "pause", topics: [topic])
        config.maxPollIntervalMs = 6500
        let revocations = Mutex(0)
        let consumer = try KafkaConsumer(
            configuration: config,
            handlers: .init(onRevoke: { _ in
                revocations.withLock { $0 += 1 }
                return []
            }),
            logger: KafkaTestKit.logger
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await consumer.run() }
            try await KafkaTestKit.produce(30, topic: topic, bootstrap: broker.bootstrap)
            let before = await KafkaTestKit.take(30, from: consumer.messages)
            #expect(before.count == 30)
            try await consumer.commit(KafkaTestKit.nextOffsets(before))

            let assigned = consumer.assignment
            try consumer.pause(Array(assigned))
            try await Task.sleep(for: .milliseconds(500))
            try await KafkaTestKit.produce(30, topic: topic, bootstrap: broker.bootstrap, from: 30)
            // Longer than max.poll.interval.ms: a member that stopped polling would be out of the group.
            let held = await KafkaTestKit.take(1, from: consumer.messages, timeout: .seconds(9))
            #expect(held.isEmpty, "delivered while paused: \(held.count)")
            #expect(consumer.assignment == assigned)
            #expect(revocations.withLock { $0 } == 0)

            try consumer.resume(Array(assigned))
            let after = await KafkaTestKit.take(30, from: consumer.messages)
            #expect(Set(after.map { String(decoding: $0.value, as: UTF8.self) }) == Set((30..<60).map(String.init)))
            // Still a member: the group accepts its commit.
            try await consumer.commit(KafkaTestKit.nextOffsets(after))
            consumer.stop()
            try await group.waitForAll()
        }
    }
}

@Suite struct KafkaConfigurationTests {
    @Test func unknownPropertyIsAConfigurationErrorNamingIt() throws {
        var config = KafkaConfiguration(bootstrapServers: "127.0.0.1:1")
        config.properties["no.such.property"] = "1"
        do {
            _ = try KafkaProducer(configuration: KafkaProducerConfiguration(kafka: config), logger: KafkaTestKit.logger)
            Issue.record("accepted an unknown property")
        } catch {
            #expect(error.isConfigurationError)
            #expect(error.description.contains("no.such.property"))
        }
    }

    @Test func secretsStayOutOfErrorsAndDescriptions() throws {
        var config = KafkaConfiguration(bootstrapServers: "127.0.0.1:1")
        config.sasl = .init(username: "u", password: "hunter2-secret")
        config.properties["security.protocol"] = "bogus"
        #expect(config.sasl?.description.contains("hunter2") == false)
        do {
            _ = try KafkaProducer(configuration: KafkaProducerConfiguration(kafka: config), logger: KafkaTestKit.logger)
            Issue.record("accepted security.protocol=bogus")
        } catch {
            #expect(error.description.contains("security.protocol=bogus"))
            #expect(!error.description.contains("hunter2"))
        }
    }

    @Test func autoCommitStaysOffWhateverIsPassedThrough() {
        var config = KafkaConsumerConfiguration(
            kafka: KafkaConfiguration(bootstrapServers: "127.0.0.1:1"),
            groupID: "g",
            topics: ["t"]
        )
        config.kafka.properties["enable.auto.commit"] = "true"
        config.kafka.properties["enable.auto.offset.store"] = "true"
        config.kafka.properties["fetch.min.bytes"] = "7"
        let rendered = config.librdkafkaProperties
        #expect(rendered["enable.auto.commit"] == "false")
        #expect(rendered["enable.auto.offset.store"] == "false")
        #expect(rendered["fetch.min.bytes"] == "7")
        #expect(rendered["group.id"] == "g")
    }

    @Test func theHeartbeatFollowsASessionTimeoutPassedThroughBelowThreeOfIt() {
        func rendered(_ passed: [String: String]) -> (session: String?, heartbeat: String?) {
            var config = KafkaConsumerConfiguration(
                kafka: KafkaConfiguration(bootstrapServers: "127.0.0.1:1"),
                groupID: "g",
                topics: ["t"]
            )
            config.kafka.properties = passed
            let p = config.librdkafkaProperties
            return (p["session.timeout.ms"], p["heartbeat.interval.ms"])
        }
        #expect(rendered([:]) == ("6000", "1000"))
        #expect(rendered(["session.timeout.ms": "45000"]) == ("45000", "1000"))
        #expect(rendered(["session.timeout.ms": "1500"]) == ("1500", "500"))
        #expect(rendered(["session.timeout.ms": "1500", "heartbeat.interval.ms": "1200"]) == ("1500", "1200"))
        #expect(rendered(["heartbeat.interval.ms": "3000"]) == ("6000", "3000"))
    }
}
