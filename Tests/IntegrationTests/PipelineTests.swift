import Foundation
import Kafka
import News
import NotificationHubs
import TestSupport
import Testing
import TextFormats

/// `hubcast run` (the real binary) against `hubcast dev-broker` and `hubcast emulator`.
@Suite(.serialized) struct PipelineTests {
    @Test func fiveThousandItemsReachExactlyTheirSubscribersAndAreCommitted() async throws {
        let h = try await PipelineHarness(devices: 2000)
        let invalid: [(topic: String, value: String)] = [
            ("news.world", "{not json"),
            ("news.sports", #"{"id":"no-headline"}"#),
            ("news.science", #"{"id":"big","headline":"\#(String(repeating: "x", count: 70_000))"}"#),
            ("news.politics", #"{"id":"mismatch","headline":"h","category":"Sports"}"#),
            ("news.business", #"{"id":"old","headline":"Expired","expiresAt":"2020-01-01T00:00:00Z"}"#),
        ]
        try await h.produce(0..<5000, extra: invalid)
        let prometheusPort = freeLoopbackPort()
        // No idle exit: the scrape must not race the run's end. The run is stopped once its
        // metrics say every item was handled; SIGTERM drains and commits as an idle exit does.
        let background = try h.startRun(["--http-port", String(prometheusPort)], exitWhenIdle: nil)
        let handled = await background.stdout.line(timeout: .seconds(300)) { text in
            guard let line = (try? PipelineHarness.metricsLines(text))?.first else { return false }
            return line["sent"] as? Int == 5000 && line["consumed"] as? Int == 5005 && line["inFlight"] as? Int == 0
        }
        #expect(handled != nil, "the run never reported 5,000 sent")
        // While it runs, the same metrics are served for Prometheus.
        let scrape = try await ChildProcess.run(
            "curl",
            ["-sS", "--fail", "--max-time", "30", "http://127.0.0.1:\(prometheusPort)/metrics"]
        )
        #expect(scrape.stdout.contains("# TYPE hubcast_sent counter"), "curl: \(scrape.stderr)")
        #expect(
            scrape.stdout.contains("# TYPE hubcast_send_latency_seconds histogram"),
            "\(scrape.stdout.prefix(2000))"
        )
        background.process.terminate()
        let run = await background.finish()
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")

        // Every valid item delivered once, to its category's followers, with its own headline.
        let followers = try h.followers()
        let deliveries = try await h.deliveries()
        #expect(deliveries.count == 5000)
        #expect(Set(deliveries.map(\.headline)) == Set((0..<5000).map { "Headline \($0)" }))
        for d in deliveries {
            let n = Int(d.headline.dropFirst("Headline ".count)) ?? -1
            #expect(d.tags == Categories.seedNames[n % 6])
            #expect(
                d.matched == followers[d.tags],
                "\(d.tags): \(d.matched) != \(String(describing: followers[d.tags]))"
            )
        }
        // Bad input went to the dead-letter file as invalid; the expired item was only counted.
        let dead = try h.deadLetters()
        #expect(dead.count == 4)
        #expect(dead.allSatisfy { $0["reason"] as? String == "invalid" })
        #expect(
            Set(dead.compactMap { ($0["source"] as? [String: Any])?["topic"] as? String }) == [
                "news.world", "news.sports", "news.science", "news.politics",
            ]
        )
        let mode = try FileManager.default.attributesOfItem(atPath: h.dlq.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // Offsets: everything consumed is committed.
        #expect(try await h.committedTotal() == 5005)
        // Metrics: every line fits the schema; the final one adds up.
        try await PipelineHarness.validateMetrics(run.stdout)
        let final = try #require(try PipelineHarness.metricsLines(run.stdout).last)
        #expect(final["final"] as? Bool == true)
        #expect(final["consumed"] as? Int == 5005)
        #expect(final["sent"] as? Int == 5000)
        #expect(final["invalid"] as? Int == 4)
        #expect(final["expired"] as? Int == 1)
        #expect(final["deadLettered"] as? Int == 4)
        #expect(final["failed"] as? Int == 0)
        #expect(final["inFlight"] as? Int == 0)
    }

    /// A 5xx is the hub's, not the item's: a hub answering 503 to everything (here its first 300
    /// answers) holds the sends and is probed, and once it recovers every item goes; nothing is
    /// dead-lettered for an outage of the hub.
    @Test func aHubAnswering503ToEverythingHoldsTheSendsAndDeliversAllWhenItRecovers() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await h.faults(#"{"status":503,"count":300}"#)
        try await h.produce(0..<60)
        let run = try await h.run(["--max-attempts", "3"])
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")
        let dead = try h.deadLetters()
        #expect(dead.isEmpty, "\(dead.prefix(3))")
        #expect(Set(try await h.deliveries().map(\.headline)) == Set((0..<60).map { "Headline \($0)" }))
        #expect(try await h.committedTotal() == 60)
        let final = try #require(try PipelineHarness.metricsLines(run.stdout).last)
        #expect(final["failed"] as? Int == 0 && final["sent"] as? Int == 60 && (final["retried"] as? Int ?? 0) > 0)
    }

    /// One item the hub answers 500 for while it takes the rest: retried, round after round, and
    /// dead-lettered as `server-error` only once its freshness bound (here its `expiresAt`) passed.
    @Test func anItemTheHubAnswers500ForIsRetriedUntilItsBoundThenDeadLettered() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await h.faults(#"{"status":500,"tag":"poison-tag"}"#)
        // 40 s of lead: on a loaded machine the run once reached the item 19 s in, leaving it one attempt.
        let expires = CivilDate.rfc3339(epochSeconds: Date().timeIntervalSince1970 + 40)
        try await h.produce(
            0..<60,
            extra: [
                (
                    "news.world",
                    #"{"id":"poison","headline":"Poison","tagExpression":"poison-tag","expiresAt":"\#(expires)"}"#
                )
            ]
        )
        let run = try await h.run(["--max-attempts", "3"])
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")
        let dead = try h.deadLetters()
        #expect(dead.count == 1 && dead.first?["itemId"] as? String == "poison", "\(dead)")
        #expect(dead.first?["reason"] as? String == "server-error" && dead.first?["status"] as? Int == 500, "\(dead)")
        #expect((dead.first?["attempts"] as? Int ?? 0) >= 1, "\(dead)")
        #expect(Set(try await h.deliveries().map(\.headline)).isSuperset(of: Set((0..<60).map { "Headline \($0)" })))
        let rounds = try await h.acceptedSendsAndStatuses()
        #expect(rounds.status500 > 3, "retried beyond one round of attempts: \(rounds.status500) answers of 500")
        #expect(try await h.committedTotal() == 61)
    }

    /// How the pace answers throttling is simulated on a manual clock (HubPacerTests) and driven
    /// event by event (PipelineEngineTests); here the real binary against a throttling emulator.
    @Test func thirtyPercentThrottlingStillDeliversEverything() async throws {
        let h = try await PipelineHarness(devices: 100)
        // 30% throttling for the first 20 throttles, then the hub recovers.
        try await h.faults(#"{"status":429,"rate":0.3,"retryAfter":1,"count":20}"#)
        try await h.produce(0..<2000)
        let run = try await h.run(["--concurrency", "32"])
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")
        let deliveries = try await h.deliveries()
        #expect(Set(deliveries.map(\.headline)) == Set((0..<2000).map { "Headline \($0)" }))
        #expect(try h.deadLetters().isEmpty, "throttling is never a reason to dead-letter")
        let lines = try PipelineHarness.metricsLines(run.stdout)
        #expect(lines.allSatisfy { $0["concurrency"] as? Int == 32 }, "concurrency is a cap, not what adapts")
        #expect((lines.last?["throttled"] as? Int ?? 0) >= 20)
    }

    /// A network that drops one connection in ten is not a hub outage: every item is delivered, the
    /// hub is never reported unavailable, and nothing is dead-lettered.
    @Test func droppedConnectionsAreRetriedWithoutPausingTheHub() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await h.faults(#"{"dropConnection":0.1}"#)
        try await h.produce(0..<2000)
        let run = try await h.run(["--concurrency", "32"])
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")
        #expect(Set(try await h.deliveries().map(\.headline)) == Set((0..<2000).map { "Headline \($0)" }))
        let outages = run.stderr.components(separatedBy: "\n").filter { $0.contains("The hub is unavailable") }
        #expect(outages.isEmpty, "\(outages.count) outages reported: \(outages.prefix(3))")
        let lines = try PipelineHarness.metricsLines(run.stdout)
        #expect(lines.allSatisfy { $0["hubAvailable"] as? Bool != false }, "hubAvailable turned false")
        #expect(try h.deadLetters().isEmpty)
        #expect((lines.last?["retried"] as? Int ?? 0) > 0, "no connection was dropped: the test proves nothing")
    }

    /// Two copies of one item in two partitions, read while the first is in flight (the hub takes
    /// 300 ms to answer): the second waits for the first and is skipped, so each item goes out once.
    @Test func aCopyInAnotherPartitionWaitsForTheSendInFlight() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await h.faults(#"{"latencyMs":300}"#)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(kafka: KafkaConfiguration(bootstrapServers: h.broker.bootstrap)),
            logger: KafkaTestKit.logger
        )
        for n in 0..<10 {
            let item = NewsItem(id: "item-\(n)", headline: "Headline \(n)", category: "World")
            for partition: Int32 in [0, 1] {
                _ = try await producer.send(topic: "news.world", partition: partition, value: item.json)
            }
        }
        try await producer.close()
        let run = try await h.run(["--concurrency", "32"])
        #expect(run.status == 0, "\(run.stderr.suffix(2000))")
        let headlines = try await h.deliveries().map(\.headline)
        #expect(headlines.sorted() == (0..<10).map { "Headline \($0)" }.sorted(), "\(headlines.sorted())")
        let final = try #require(try PipelineHarness.metricsLines(run.stdout).last)
        #expect(final["duplicates"] as? Int == 10 && final["sent"] as? Int == 10, "\(final)")
    }

    @Test func sigtermDrainsAndExitsZeroThenASecondRunDeliversTheRest() async throws {
        let h = try await PipelineHarness(devices: 100)
        // 20 ms a send at 16 in flight: 20,000 take 25 s, so however late a busy machine lets the
        // test see the first 2,000 (about 2.5 s in), the run is still mid-stream when signalled (at
        // 5 ms it had 5.6 s to spare, less than the 7 s a fresh clone's full run was seen to stall).
        try await h.faults(#"{"latencyMs":20}"#)
        try await h.produce(0..<20_000)
        let run = try h.startRun(["--concurrency", "16"])
        // Stop it part-way: once deliveries are flowing.
        try await h.waitForDeliveries(2000)
        run.process.terminate()
        let stopped = await run.finish()
        #expect(stopped.status == 0)
        let stdout = stopped.stdout
        let first = Set(try await h.deliveries().map(\.headline))
        #expect(first.count < 20_000, "the run finished before SIGTERM; the test proves nothing")
        #expect(try PipelineHarness.metricsLines(stdout).last?["final"] as? Bool == true)

        try await h.clearFaults()
        let second = try await h.run()
        #expect(second.status == 0)
        let all = Set(try await h.deliveries().map(\.headline))
        #expect(all == Set((0..<20_000).map { "Headline \($0)" }))
    }

    @Test func sigkillLosesNothing() async throws {
        let h = try await PipelineHarness(devices: 100)
        // 50 ms a send at 16 in flight: 5,000 take 16 s, so however late a busy machine lets the test
        // see the first 1,000 delivered (about 3 s in), the run is still mid-stream when it is killed.
        try await h.faults(#"{"latencyMs":50}"#)
        try await h.produce(0..<5000)
        let run = try h.startRun(["--concurrency", "16"])
        try await h.waitForDeliveries(1000)
        kill(run.process.processIdentifier, SIGKILL)
        _ = await run.finish()
        #expect(try await h.deliveries().count < 5000, "the run finished before SIGKILL; the test proves nothing")

        try await h.clearFaults()
        let second = try await h.run()
        #expect(second.status == 0)
        // At least once: every item, some possibly twice (sent but not yet committed when killed).
        #expect(Set(try await h.deliveries().map(\.headline)) == Set((0..<5000).map { "Headline \($0)" }))
    }
}

/// A hub outage: the emulator process is stopped (SIGSTOP) for 20 s, then continued.
@Suite struct HubOutageTests {
    @Test func theConsumerHoldsAndStaysInItsGroupAndNothingIsLost() async throws {
        let h = try await PipelineHarness(devices: 100)
        // 20 ms per send at 8 in flight: the run takes long enough for the outage to land mid-way.
        try await h.faults(#"{"latencyMs":20}"#)
        try await h.produce(0..<600)
        // A short request timeout makes the stopped hub show up as timeouts quickly.
        let run = try h.startRun(
            [
                "--concurrency", "8", "--request-timeout", "1", "--max-attempts", "2", "--batch-size", "50",
                "--kafka-property", "max.poll.interval.ms=10000",
            ],
            exitWhenIdle: nil
        )
        async let finished = run.finish()
        try await h.waitForDeliveries(300)
        // The rest is published during the outage: it lands mid-run however fast the first part went.
        kill(h.emulator.process.processIdentifier, SIGSTOP)
        try await h.produce(600..<3000)
        // The outage itself: the 20 s are the fault being tested, not a wait for something to happen.
        try await Task.sleep(for: .seconds(20))
        kill(h.emulator.process.processIdentifier, SIGCONT)
        try await h.waitForEveryItem(0..<3000)
        run.process.terminate()
        let result = await finished
        let stderr = result.stderr, stdout = result.stdout
        #expect(result.status == 0, "\(stderr.suffix(3000))")
        #expect(stderr.contains("The hub is unavailable: its sends are held"))
        // One assignment and one revoke (at exit): the member never left its group during the outage.
        #expect(stderr.components(separatedBy: "Partitions revoked").count - 1 == 1, "\(stderr.suffix(3000))")
        #expect(stderr.components(separatedBy: "Partitions assigned").count - 1 == 1)
        #expect(Set(try await h.deliveries().map(\.headline)) == Set((0..<3000).map { "Headline \($0)" }))
        #expect(try h.deadLetters().isEmpty)
        #expect(try await h.committedTotal() == 3000)
        // Backpressure: the in-flight count stayed bounded while the hub was stopped.
        let inFlight = try PipelineHarness.metricsLines(stdout).compactMap { $0["inFlight"] as? Int }
        #expect(inFlight.max() ?? 0 <= 8 * 2 + 50, "\(inFlight)")
    }
}

/// `hubcast run` refuses to start against an unreachable broker or hub, or refused credentials.
@Suite struct RunStartUpTests {
    @Test func unreachableBrokerHubOrBadKeyFailFastWithTheirCodes() async throws {
        let h = try await PipelineHarness(devices: 1)
        let noBroker = try await HubcastBinary.run(
            ["run", "--brokers", "127.0.0.1:1", "--connect-timeout", "1", "--hub", "hubcast"],
            environment: h.environment
        )
        #expect(noBroker.status == 3)
        #expect(noBroker.stderr.contains("could not reach Kafka at 127.0.0.1:1"))

        let wrongKey = h.emulator.firstLine.replacingOccurrences(of: "SharedAccessKey=", with: "SharedAccessKey=x")
        let refused = try await HubcastBinary.run(
            ["run", "--brokers", h.broker.bootstrap, "--hub", "hubcast"],
            environment: ["HUBCAST_CONNECTION_STRING": wrongKey]
        )
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("the hub refused the credentials (HTTP 401)"))
        #expect(!refused.stderr.contains(wrongKey.components(separatedBy: "SharedAccessKey=").last ?? "-"))

        let port = freeLoopbackPort()
        let noHub = try await HubcastBinary.run(
            ["run", "--brokers", h.broker.bootstrap, "--hub", "hubcast", "--max-attempts", "1"],
            environment: [
                "HUBCAST_CONNECTION_STRING":
                    "Endpoint=sb://127.0.0.1:\(port)/;SharedAccessKeyName=k;SharedAccessKey=s;UseDevelopmentEmulator=true"
            ]
        )
        #expect(noHub.status == 3)
        #expect(noHub.stderr.contains("could not reach the hub at http://127.0.0.1:\(port)/"))
    }
}
