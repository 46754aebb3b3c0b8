import Foundation
import TestSupport
import Testing

/// `--http-port` on the real binary: /healthz, /readyz and /metrics answer, and both probes say
/// the hub is out of reach, and back, without it deciding either.
@Suite(.serialized) struct HealthEndpointTests {
    /// One GET: the status code and the body.
    static func get(_ url: String) async throws -> (status: Int, body: String) {
        let result = try await ChildProcess.run(
            "curl",
            ["-s", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}", url]
        )
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    /// GETs `url` until `accept` says yes (each answer is an event; 120 s is only a guard).
    static func waitFor(
        _ url: String,
        timeout: Duration = .seconds(120),
        _ accept: @escaping ((status: Int, body: String)) -> Bool
    ) async throws -> (status: Int, body: String)? {
        try await poll(every: .milliseconds(100), timeout: timeout) {
            let answer = try await get(url)
            return accept(answer) ? answer : nil
        }
    }

    static func json(_ body: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:]
    }

    @Test func theProbesSayTheHubOutOfReachAndBackAndStayReady() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await h.faults(#"{"latencyMs":20}"#)
        try await h.produce(0..<300)
        let port = freeLoopbackPort()
        let base = "http://127.0.0.1:\(port)"
        let run = try h.startRun(
            ["--http-port", String(port), "--concurrency", "8", "--request-timeout", "2"],
            exitWhenIdle: nil
        )
        // Up: alive, ready (a broker answered; joining or owning its partitions), and the metrics in
        // Prometheus text. Readiness waits for Kafka's first answer, a few milliseconds after start.
        let alive = try await Self.waitFor(base + "/healthz") { $0.status == 200 }
        #expect(Self.json(alive?.body ?? "")["healthy"] as? Bool == true, "\(String(describing: alive))")
        let ready = try await Self.waitFor(base + "/readyz") { $0.status == 200 }
        #expect(ready != nil, "never ready with Kafka up")
        try await h.waitForDeliveries(100)
        let metrics = try await Self.get(base + "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.body.contains("# TYPE hubcast_sent counter"), "\(metrics.body.prefix(500))")
        // Its deliveries came from partitions it was assigned: that rebalance is counted.
        #expect(metrics.body.contains(#"hubcast_rebalances_total{kind="assigned"} 1"#), "\(metrics.body.prefix(2000))")

        // The hub stops answering: said on both probes, and both stay 200 (an outage of the hub
        // must not hold up a rollout or a node drain, nor restart the process).
        // What is published from now on meets the stopped hub, however much was delivered by now.
        kill(h.emulator.process.processIdentifier, SIGSTOP)
        try await h.produce(300..<2000)
        let said = try await Self.waitFor(base + "/readyz") { answer in
            (Self.json(answer.body)["notes"] as? [String] ?? []).contains { $0.hasPrefix("hub: unavailable") }
        }
        let aliveDuring = try await Self.get(base + "/healthz")
        kill(h.emulator.process.processIdentifier, SIGCONT)
        let saidAnswer = try #require(said, "/readyz never said the hub was unavailable with the hub stopped")
        #expect(saidAnswer.status == 200, "\(saidAnswer.body)")
        let body = Self.json(saidAnswer.body)
        #expect(
            body["healthy"] as? Bool == true && (body["reasons"] as? [String])?.isEmpty == true,
            "\(saidAnswer.body)"
        )
        #expect(((body["checks"] as? [String: Any])?["hub"] as? [String: Any])?["decides"] as? Bool == false)
        #expect(aliveDuring.status == 200, "\(aliveDuring.body)")

        // The hub answers again: no longer said, and every item gets through.
        let clear = try await Self.waitFor(base + "/readyz") {
            (Self.json($0.body)["notes"] as? [String])?.isEmpty == true
        }
        #expect(clear != nil, "/readyz still says the hub is unavailable after it came back")
        try await h.waitForEveryItem(0..<2000)
        run.process.terminate()
        let result = await run.finish()
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(Set(try await h.deliveries().map(\.headline)) == Set((0..<2000).map { "Headline \($0)" }))
    }

    /// Ready means connected to Kafka: with every broker stopped, /readyz says so (503) while
    /// /healthz stays 200 (a restart would not bring Kafka back); once the broker answers, ready.
    @Test func kafkaOutOfReachMakesItUnreadyButAlive() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await h.produce(0..<100)
        let port = freeLoopbackPort()
        let base = "http://127.0.0.1:\(port)"
        let run = try h.startRun(["--http-port", String(port), "--concurrency", "8"], exitWhenIdle: nil)
        let ready = try await Self.waitFor(base + "/readyz") { $0.status == 200 }
        #expect(ready != nil, "never ready with Kafka up")
        try await h.waitForDeliveries(100)
        kill(h.broker.server.process.processIdentifier, SIGSTOP)
        let unready = try await Self.waitFor(base + "/readyz") { $0.status == 503 }
        let alive = try await Self.get(base + "/healthz")
        kill(h.broker.server.process.processIdentifier, SIGCONT)
        let answer = try #require(unready, "/readyz stayed 200 with the broker stopped")
        let reasons = Self.json(answer.body)["reasons"] as? [String] ?? []
        #expect(reasons.count == 1 && reasons[0].hasPrefix("kafka: not answering"), "\(answer.body)")
        #expect(alive.status == 200, "\(alive.body)")
        let back = try await Self.waitFor(base + "/readyz") { $0.status == 200 }
        #expect(back != nil, "/readyz did not come back once the broker answered")
        run.process.terminate()
        let result = await run.finish()
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
    }

    @Test func refusedCredentialsAreSaidButLeaveItAliveAndReady() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await h.faults(#"{"latencyMs":20}"#)
        try await h.produce(0..<300)
        let port = freeLoopbackPort()
        let base = "http://127.0.0.1:\(port)"
        let run = try h.startRun(["--http-port", String(port), "--concurrency", "8"], exitWhenIdle: nil)
        try await h.waitForDeliveries(100)
        // Refused credentials are a hub-level failure too: said, alive and ready all the same.
        try await h.faults(#"{"status":401}"#)
        try await h.produce(300..<1000)
        let said = try await Self.waitFor(base + "/healthz") { answer in
            (Self.json(answer.body)["notes"] as? [String] ?? []).contains { $0.hasPrefix("hub: unavailable") }
        }
        #expect(said?.status == 200, "\(String(describing: said))")
        #expect(try await Self.get(base + "/readyz").status == 200)
        try await h.clearFaults()
        #expect(
            try await Self.waitFor(base + "/healthz") { (Self.json($0.body)["notes"] as? [String])?.isEmpty == true }
                != nil
        )
        try await h.waitForEveryItem(0..<1000)
        run.process.terminate()
        let result = await run.finish()
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
    }

    @Test func theEmulatorServesTheProbesToo() async throws {
        let port = freeLoopbackPort()
        let emulator = try await ServerProcess(
            HubcastBinary.path,
            ["emulator", "--http-port", String(port), "--log-level", "warning"]
        )
        defer { emulator.stop() }
        let alive = try await Self.waitFor("http://127.0.0.1:\(port)/healthz") { $0.status == 200 }
        #expect(alive != nil)
        #expect(try await Self.get("http://127.0.0.1:\(port)/readyz").status == 200)
        // A send without a token is refused, and /metrics counts it by status.
        let hub = emulator.firstLine.split(separator: ":").dropFirst(2).first?.split(separator: "/").first ?? ""
        _ = try await ChildProcess.run(
            "curl",
            ["-s", "-X", "POST", "--data", "{}", "http://127.0.0.1:\(hub)/hubcast/messages/?api-version=2020-06"]
        )
        let metrics = try await Self.get("http://127.0.0.1:\(port)/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.body.contains(#"hubcast_emulator_sends{status="401"} 1"#), "\(metrics.body)")
    }

    @Test func theDeprecatedPrometheusPortStillWorksAndDisagreeingPortsAreRefused() async throws {
        let hub = SendCommandTests.environment(port: 1)
        let clash = try await HubcastBinary.run(
            [
                "run", "--brokers", "127.0.0.1:1", "--connect-timeout", "60",
                "--http-port", "9100", "--prometheus-port", "9200",
            ],
            environment: hub
        )
        #expect(clash.status == 2)
        #expect(
            clash.stderr.contains("--prometheus-port (deprecated) and --http-port disagree (9200 and 9100)"),
            "\(clash.stderr)"
        )
        let legacy = try await HubcastBinary.run(
            [
                "run", "--brokers", "127.0.0.1:1", "--connect-timeout", "1",
                "--prometheus-port", "9200",
            ],
            environment: hub
        )
        #expect(legacy.stderr.contains("--prometheus-port and --prometheus-host are deprecated"), "\(legacy.stderr)")
    }
}
