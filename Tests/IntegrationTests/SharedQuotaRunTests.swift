import Foundation
import TestSupport
import Testing

/// Two `hubcast run` in one group, the real binary on the dev broker: they find each other
/// through the quota topic and split the hub's rate; the one left takes all of it.
@Suite(.serialized) struct SharedQuotaRunTests {
    static func metrics(_ text: String) -> [String: Any]? { (try? PipelineHarness.metricsLines(text))?.first }

    @Test func twoRunsSplitAKnownQuotaAndTheOneLeftTakesItAll() async throws {
        let h = try await PipelineHarness(devices: 100)
        try await h.produce(0..<3000)
        // 200 sends/s for the hub, whoever sends: 3,000 items take 15 s, so both have a backlog.
        let a = try h.startRun(["--max-rate", "200"], exitWhenIdle: nil)
        let b = try h.startRun(["--max-rate", "200"], exitWhenIdle: nil)
        let split: @Sendable (String) -> Bool = { text in
            guard let line = Self.metrics(text), line["quotaPeers"] as? Int == 1,
                let share = line["paceShare"] as? Double, let rate = line["paceRate"] as? Double
            else { return false }
            return share < 0.8 && rate < 0.8 * 200
        }
        let aSplit = await a.stdout.line(where: split)
        let bSplit = await b.stdout.line(where: split)
        #expect(aSplit != nil, "A never reported a peer and a share: \(a.stdout.text.suffix(1500))")
        #expect(bSplit != nil, "B never reported a peer and a share: \(b.stdout.text.suffix(1500))")

        a.process.terminate()
        let aResult = await a.finish()
        #expect(aResult.status == 0, "\(aResult.stderr.suffix(2000))")
        let stopped = ContinuousClock.now
        let alone = await b.stdout.first { line in
            guard line.at > stopped, let m = Self.metrics(line.text) else { return false }
            return m["quotaPeers"] as? Int == 0 && m["paceShare"] as? Double == 1 && m["paceRate"] as? Double == 200
        }
        #expect(alone != nil, "B never took the whole quota after A stopped: \(b.stdout.text.suffix(1500))")

        try await h.waitForEveryItem(0..<3000)
        b.process.terminate()
        let bResult = await b.finish()
        #expect(bResult.status == 0, "\(bResult.stderr.suffix(2000))")
        #expect(
            Self.metrics(bResult.stdout.split(separator: "\n").last.map(String.init) ?? "")?["final"] as? Bool == true
        )
    }

    @Test func aQuotaTopicKafkaWouldRefuseIsRefusedAtStartUp() async throws {
        let result = try await HubcastBinary.run(
            ["run", "--brokers", "127.0.0.1:1", "--hub", "h", "--quota-topic", "no spaces/here"],
            environment: [
                "HUBCAST_CONNECTION_STRING": "Endpoint=sb://127.0.0.1:1/;SharedAccessKeyName=k;SharedAccessKey=a2V5"
            ]
        )
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--quota-topic"), "\(result.stderr)")
    }
}
