import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Two `hubcast run` (the real binary) in one consumer group on Tansu, a broker with real group
/// coordination (the dev broker refuses commits while a group rebalances, so it cannot show this):
/// the second joins mid-stream, or the first is SIGKILLed after the second joined. Nothing may be
/// missing; items sent by both stay within what the member losing partitions had in flight (or, after
/// a SIGKILL, had not yet committed). Each case prints its figures: items, duplicates, time, and how
/// long partitions sat unowned, measured from the two runs' "Partitions revoked/assigned" lines,
/// timed as they arrive here (swift-log's timestamps have one-second resolution).
///
/// Tansu and the librdkafka that can talk to it come from `deploy/tansu.sh` (into `.build-kafka/`);
/// if they cannot be installed the tests fail, they never skip.
@Suite(.serialized) struct MultiInstanceTests {
    static let items = 4000
    static let concurrency = 16
    /// Emulator latency per send: keeps `concurrency` sends in flight at any time.
    static let latencyMs = 50
    static let commitIntervalMs = 1000

    enum Assignor: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case eagerRange = "range (eager)"
        case cooperativeSticky = "cooperative-sticky"
        var arguments: [String] {
            switch self {
            case .eagerRange: []
            case .cooperativeSticky: ["--kafka-property", "partition.assignment.strategy=cooperative-sticky"]
            }
        }
        var testDescription: String { rawValue }
    }

    @Test(arguments: Assignor.allCases)
    func aSecondRunJoiningMidStreamLosesNothingAndRepeatsAtMostTheSendsInFlight(_ assignor: Assignor) async throws {
        let started = ContinuousClock.now
        // Half the items now, half once B owns partitions: under load B's start and join can take
        // longer than A needs for everything, and B would then own partitions with nothing left to send.
        let half = Self.items / 2
        let g = try await MultiInstanceHarness.make(publishing: 0..<half)
        defer { g.stopAll() }
        let group = "multi-\(UUID().uuidString.prefix(8))"

        // A idles out only after 15 s, so it is still there however long B takes to join.
        let a = try g.startRun("A", group: group, idle: 15, extra: assignor.arguments)
        try await g.waitForDeliveries(300, or: [a])
        let b = try g.startRun("B", group: group, extra: assignor.arguments)
        let bAssigned = try #require(
            await b.firstAssignment(timeout: .seconds(60)),
            "B was never given partitions\n\(a.stderrTail)\n\(b.stderrTail)"
        )
        try await g.publish(half..<Self.items)

        let ra = try await a.finish(timeout: .seconds(120)), rb = try await b.finish(timeout: .seconds(120))
        #expect(ra.status == 0, "A: \(ra.stderr.suffix(3000))")
        #expect(rb.status == 0, "B: \(rb.stderr.suffix(3000))")

        let d = try await g.deliveries()
        let expected = Set((0..<Self.items).map { "Headline \($0)" })
        let missing = expected.subtracting(d.map(\.headline))
        #expect(missing.isEmpty, "\(missing.count) items never delivered, e.g. \(missing.sorted().prefix(5))")
        let duplicates = d.count - Set(d.map(\.headline)).count
        let sentA = try Self.finalSent(ra.stdout), sentB = try Self.finalSent(rb.stdout)
        #expect(sentA + sentB == d.count, "A sent \(sentA), B sent \(sentB), the hub took \(d.count)")
        #expect(sentB > 0, "B sent nothing: A finished alone and the test proves nothing")
        // Scaling out: A goes on with the partitions it keeps (it does not sit on them until its idle
        // timeout hands them to B). Eager: A sends after it is assigned its share again; cooperative:
        // A keeps its share throughout and sends after B started.
        // (Not A's later assignments: B leaves first once idle, and A takes its partitions back.)
        let aResumed =
            switch assignor {
            case .eagerRange:
                a.events().first { $0.assigned && !$0.partitions.isEmpty && $0.at > b.startedAt }?.at ?? b.startedAt
            case .cooperativeSticky: b.startedAt
            }
        let sentABefore = a.sent(before: aResumed)
        #expect(
            sentA > sentABefore,
            "A sent nothing after the join (\(sentABefore) before, \(sentA) at exit)\n\(a.stderrTail)"
        )
        #expect(
            duplicates <= 2 * Self.concurrency,
            "\(duplicates) items sent twice; at most the sends in flight of the members losing partitions (\(2 * Self.concurrency))"
        )
        let deadLetters = try g.deadLetters()
        #expect(deadLetters.isEmpty, "\(deadLetters.count) dead letters: \(deadLetters.prefix(3))")

        let gaps = RebalanceGaps.joinGaps(a: a, b: b, bStarted: b.startedAt, bAssigned: bAssigned.at)
        #expect(!gaps.isEmpty, "no partition changed hands when B joined\n\(a.stderrTail)\n\(b.stderrTail)")
        print(
            """
            MultiInstanceTests[\(assignor.rawValue)]: items \(Self.items), deliveries \(d.count), duplicates \(duplicates), \
            sent by A \(sentA), by B \(sentB), dead letters 0, \
            partitions unowned while B joined: \(RebalanceGaps.describe(gaps)), \
            B's first assignment \(RebalanceGaps.format(bAssigned.at - b.startedAt)) s after it started, \
            time \(RebalanceGaps.format(ContinuousClock.now - started)) s
            """
        )
    }

    @Test func aRunSIGKILLedAfterTheSecondJoinedLosesNothing() async throws {
        let started = ContinuousClock.now
        let g = try await MultiInstanceHarness.make()
        defer { g.stopAll() }
        let group = "multi-kill-\(UUID().uuidString.prefix(8))"

        let a = try g.startRun("A", group: group)
        try await g.waitForDeliveries(300, or: [a])
        // B idles out only 12 s after its last record or assignment: longer than A's session
        // timeout (6 s) plus a join round, so it is still there when A's partitions come to it.
        let b = try g.startRun("B", group: group, idle: 12)
        _ = try #require(
            await b.firstAssignment(timeout: .seconds(60)),
            "B was never given partitions\n\(a.stderrTail)\n\(b.stderrTail)"
        )
        // Both are sending: A has sends in flight and work finished since its last commit.
        let atAssignment = try await g.acceptedSends()
        try await g.waitForDeliveries(atAssignment + 300, or: [a, b])
        let aOwned = try #require(a.events().last(where: { $0.assigned && !$0.partitions.isEmpty }), "A owned nothing")
            .partitions
        let killedAt = ContinuousClock.now
        kill(a.process.processIdentifier, SIGKILL)
        let atKill = try await g.acceptedSends()
        let ra = try await a.finish(timeout: .seconds(10))
        #expect(ra.status == SIGKILL && ra.process.terminationReason == .uncaughtSignal)
        #expect(atKill < Self.items, "everything was delivered before the SIGKILL: the test proves nothing")

        let rb = try await b.finish(timeout: .seconds(150))
        #expect(rb.status == 0, "B: \(rb.stderr.suffix(3000))")
        let d = try await g.deliveries()
        let expected = Set((0..<Self.items).map { "Headline \($0)" })
        let missing = expected.subtracting(d.map(\.headline))
        #expect(missing.isEmpty, "\(missing.count) items never delivered, e.g. \(missing.sorted().prefix(5))")
        let duplicates = d.count - Set(d.map(\.headline)).count
        // The bound: what B's join may repeat (both members' sends in flight), plus what A had in
        // flight at the kill, plus what A finished since its last commit: commits every second, and
        // A cannot finish more than `concurrency` sends per `latencyMs` (16 / 50 ms = 320 a second);
        // a quarter second of slack for the commit's own round trip and the engine's tick.
        let perSecond = Self.concurrency * 1000 / Self.latencyMs
        let bound = 2 * Self.concurrency + Self.concurrency + perSecond * (Self.commitIntervalMs + 250) / 1000
        #expect(duplicates <= bound, "\(duplicates) items sent twice; bound \(bound)")
        let deadLetters = try g.deadLetters()
        #expect(deadLetters.isEmpty, "\(deadLetters.count) dead letters: \(deadLetters.prefix(3))")

        // How long A's partitions sat unowned: from the SIGKILL to B's assignment of each.
        let taken = b.events().filter { $0.assigned && $0.at > killedAt }
        var gaps: [String: Duration] = [:]
        for p in aOwned { if let e = taken.first(where: { $0.partitions.contains(p) }) { gaps[p] = e.at - killedAt } }
        #expect(
            gaps.count == aOwned.count,
            "B never took \(Set(aOwned).subtracting(gaps.keys).sorted())\n\(b.stderrTail)"
        )
        let sentB = try Self.finalSent(rb.stdout)
        print(
            """
            MultiInstanceTests[SIGKILL, range (eager)]: items \(Self.items), deliveries \(d.count), duplicates \(duplicates) (bound \(bound)), \
            delivered when A was killed \(atKill), sent by B \(sentB), dead letters 0, \
            A's \(aOwned.count) partitions unowned after the SIGKILL: \(RebalanceGaps.describe(gaps)), \
            time \(RebalanceGaps.format(ContinuousClock.now - started)) s
            """
        )
    }

    /// A member whose partitions are paused by backpressure (its buffer full for a second) when an
    /// eager rebalance revokes them, and which gets some of them back, must consume them again.
    /// librdkafka keeps a partition's pause flag across unassign and assign (confluentinc/librdkafka#1849),
    /// so `PauseController` resumes every arriving partition explicitly; before it did, the member sat
    /// on such partitions (until `--exit-when-idle`, or for ever).
    @Test func aMemberPausedByBackpressureWhenRevokedConsumesItsPartitionsAgainWhenTheyComeBack() async throws {
        // 200 ms a send, 16 at a time: 80 sends a second against a 2,000-record buffer, so the
        // buffer stays full (and the partitions paused) for well over ten seconds.
        let g = try await MultiInstanceHarness.make(latencyMs: 200)
        defer { g.stopAll() }
        let group = "multi-pause-\(UUID().uuidString.prefix(8))"
        let a = try g.startRun("A", group: group, idle: 30, batchSize: nil, extra: ["--log-level", "debug"])
        // Until partitions of both numbers are paused, so that whichever half the range assignor
        // gives back to A, some of it was paused: backpressure pauses the whole assignment, while
        // the engine's own pauses (a partition whose records it set aside) can come first and
        // cover one half only.
        let pausedNow = Mutex<Set<String>>([])
        let pausedLine = { @Sendable (line: String) in
            guard let change = MultiInstanceRun.pauseChange(line) else { return false }
            return pausedNow.withLock { paused in
                paused.formUnion(change.paused)
                paused.subtract(change.resumed)
                return paused.contains { $0.hasSuffix("[0]") } && paused.contains { $0.hasSuffix("[1]") }
            }
        }
        _ = try #require(
            await a.stderr.first(timeout: .seconds(60)) { pausedLine($0.text) },
            "A's partitions were never paused by backpressure\n\(a.stderrTail)"
        )
        let b = try g.startRun("B", group: group, idle: 30, batchSize: nil)
        _ = try #require(
            await b.firstAssignment(timeout: .seconds(60)),
            "B was never given partitions\n\(b.stderrTail)"
        )
        let revoked = try #require(
            a.events().first { !$0.assigned && !$0.partitions.isEmpty },
            "A lost no partitions when B joined"
        )
        let back = try #require(
            await a.assignment(after: revoked.at, timeout: .seconds(30)),
            "A got nothing back\n\(a.stderrTail)"
        )
        // The premise: some partition that comes back to A was paused in librdkafka when it left.
        // (The engine's own pauses set buffered records aside, so backpressure may lift and
        // resume others in between: only the state at the revoke counts.)
        let pausedAtRevoke = a.paused(at: revoked.at)
        try #require(
            !pausedAtRevoke.isDisjoint(with: back.partitions),
            "none of the partitions A got back was paused when revoked (paused: \(pausedAtRevoke.sorted())): the test proves nothing\n\(a.stderrTail)"
        )
        // Its in-flight sends were drained in the revoke, seconds before the re-assignment.
        let sentAtReassignment = a.sent(before: back.at)
        // Sends of the records behind those partitions show in a metrics line within a second or
        // two; five seconds of metrics lines without one mean A sits on its partitions.
        let progressed = await a.stdout.first(timeout: .seconds(5)) { line in
            ((try? JSONSerialization.jsonObject(with: Data(line.text.utf8)) as? [String: Any])?["sent"] as? Int ?? 0)
                > sentAtReassignment
        }
        let sentLater = a.sent(before: .now)
        #expect(
            progressed != nil,
            "A sent \(sentAtReassignment) by its re-assignment of \(back.partitions.count) partitions and no more in the 5 s after"
        )
        print(
            "MultiInstanceTests[backpressure pause across an eager rebalance]: A sent \(sentAtReassignment) by its re-assignment of \(back.partitions.count) partitions, \(sentLater) when the test looked last"
        )
    }

    static func finalSent(_ stdout: String) throws -> Int {
        let final = try PipelineHarness.metricsLines(stdout).last { $0["final"] as? Bool == true }
        return try #require(final?["sent"] as? Int, "no final metrics line in \(stdout.suffix(500))")
    }
}

/// Tansu with the news topics and items, the emulator with 50 ms of latency, and the runs.
final class MultiInstanceHarness: Sendable {
    static let hub = "hubcast"
    let broker: TansuBroker
    let emulator: ServerProcess
    let directory: URL
    private let members = Mutex<[MultiInstanceRun]>([])

    private init(broker: TansuBroker, emulator: ServerProcess, directory: URL) {
        self.broker = broker
        self.emulator = emulator
        self.directory = directory
    }

    /// Installs Tansu if needed, starts it and the emulator, creates 6 × 2 partitions plus the
    /// dead-letter topic, publishes the items in `publishing` and sets the hub's latency.
    static func make(
        latencyMs: Int = MultiInstanceTests.latencyMs,
        publishing: Range<Int> = 0..<MultiInstanceTests.items
    ) async throws -> MultiInstanceHarness {
        try await TansuBroker.ensureInstalled()
        try await TansuBroker.checkLinksNewLibrdkafka(HubcastBinary.path)
        let broker = try await TansuBroker()
        let emulator: ServerProcess
        do {
            emulator = try await ServerProcess(
                HubcastBinary.path,
                ["emulator", "--hub", hub, "--devices", "100", "--sample-payloads", "1", "--log-level", "warning"]
            )
        } catch {
            broker.stop()
            throw error
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hubcast-multi-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let g = MultiInstanceHarness(broker: broker, emulator: emulator, directory: directory)
        do {
            try await broker.createNewsTopics(partitions: 2)
            try await g.publish(publishing)
            let faults = try await ChildProcess.run(
                "curl",
                ["-sf", "-X", "POST", "--data", #"{"latencyMs":\#(latencyMs)}"#, g.emulatorURL + "_emulator/faults"]
            )
            guard faults.status == 0 else { throw Failure("the emulator refused the latency fault: \(faults.stderr)") }
        } catch {
            g.stopAll()
            throw error
        }
        return g
    }

    /// Publishes items `range` ("Headline n", categories in turn) with `hubcast produce`.
    func publish(_ range: Range<Int>) async throws {
        let categories = ["World", "Politics", "Business", "Technology", "Science", "Sports"]
        let lines =
            range.map { n in
                #"{"id":"item-\#(n)","headline":"Headline \#(n)","category":"\#(categories[n % 6])"}"#
            }.joined(separator: "\n") + "\n"
        // Produced by the binary: this test process links Debian's librdkafka, which Tansu refuses.
        let produced = try await HubcastBinary.run(
            ["produce", "--brokers", broker.bootstrap],
            stdin: lines,
            environment: TansuBroker.environment,
            timeout: .seconds(60)
        )
        guard produced.status == 0, produced.stdout.contains("sent \(range.count), rejected 0, failed 0") else {
            throw Failure(
                "hubcast produce to Tansu exited \(produced.status): \(produced.stdout) \(produced.stderr.suffix(2000))"
            )
        }
    }

    var emulatorURL: String {
        let port = emulator.firstLine.split(separator: ":").dropFirst(2).first?.split(separator: "/").first ?? ""
        return "http://127.0.0.1:\(port)/"
    }

    /// Starts `hubcast run` in `group` against Tansu, with the newer librdkafka.
    /// `batchSize` nil keeps hubcast's default (100, a consumer buffer of 2000), so backpressure pauses
    /// partitions as it would in production.
    func startRun(
        _ name: String,
        group: String,
        idle: Int = 5,
        batchSize: Int? = nil,
        extra: [String] = []
    ) throws -> MultiInstanceRun {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: HubcastBinary.path)
        process.arguments =
            [
                "run", "--brokers", broker.bootstrap, "--hub", Self.hub, "--group", group,
                "--dlq", "file:" + directory.appendingPathComponent("\(name).dlq.jsonl").path,
                "--concurrency", String(MultiInstanceTests.concurrency),
                "--commit-interval-ms", String(MultiInstanceTests.commitIntervalMs),
                "--metrics-interval", "1", "--exit-when-idle", String(idle), "--retry-base-ms", "10", "--retry-max-ms",
                "200",
            ]
            + (batchSize.map { ["--batch-size", String($0)] } ?? []) + extra
        process.environment = ProcessInfo.processInfo.environment
            .merging(["HUBCAST_CONNECTION_STRING": emulator.firstLine]) { $1 }
            .merging(TansuBroker.environment) { $1 }
        let out = Pipe.unshared(), err = Pipe.unshared()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let member = MultiInstanceRun(
            name: name,
            process: process,
            stdout: LineWatcher(out.fileHandleForReading),
            stderr: LineWatcher(err.fileHandleForReading)
        )
        try process.run()
        members.withLock { $0.append(member) }
        return member
    }

    /// Every child stopped: runs still going are SIGKILLed, then the emulator and Tansu.
    func stopAll() {
        for m in members.withLock({ $0 }) where m.process.isRunning {
            kill(m.process.processIdentifier, SIGKILL)
            m.process.reap()
        }
        emulator.stop()
        broker.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Sends the emulator accepted so far.
    func acceptedSends() async throws -> Int {
        let result = try await ChildProcess.run("curl", ["-sf", emulatorURL + "_emulator/stats"])
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        return (json?["statusCounts"] as? [String: Int])?["201"] ?? 0
    }

    /// Waits until the hub accepted `count` sends; fails if a minute passes or one of `runs` ends first.
    func waitForDeliveries(_ count: Int, or runs: [MultiInstanceRun]) async throws {
        let reached = try await poll(every: .milliseconds(50), timeout: .seconds(60)) { () async throws -> Bool? in
            if try await acceptedSends() >= count { return true }
            if let ended = runs.first(where: { !$0.process.isRunning }) {
                throw Failure(
                    "\(ended.name) exited (\(ended.process.terminationStatus)) before the hub took \(count) sends\n\(ended.stderrTail)"
                )
            }
            return nil
        }
        guard reached != nil else {
            throw Failure(
                "the hub took fewer than \(count) sends in a minute\n" + runs.map(\.stderrTail).joined(separator: "\n")
            )
        }
    }

    /// Every send the emulator recorded, by the headline of its first payload.
    func deliveries() async throws -> [(headline: String, tags: String)] {
        let result = try await ChildProcess.run("curl", ["-sf", emulatorURL + "_emulator/deliveries"])
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        return (json?["deliveries"] as? [[String: Any]] ?? []).map { record in
            let payload = (record["payloads"] as? [String])?.first ?? ""
            let headline = payload.components(separatedBy: " News : ").last?.components(separatedBy: "\"").first ?? ""
            return (headline, record["tagExpression"] as? String ?? "")
        }
    }

    /// Dead-letter records written by any run.
    func deadLetters() throws -> [String] {
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
        return files.flatMap {
            ((try? String(contentsOf: $0, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

/// One `hubcast run` child: its output lines with the instant each arrived.
struct MultiInstanceRun: Sendable {
    let name: String
    let process: Process
    let stdout: LineWatcher
    let stderr: LineWatcher
    let startedAt = ContinuousClock.now

    struct Event: Sendable {
        let at: ContinuousClock.Instant
        let assigned: Bool
        let partitions: [String]
    }

    /// Its "Partitions assigned" and "Partitions revoked" lines so far.
    func events() -> [Event] {
        stderr.lines.compactMap(Self.event)
    }

    /// The rebalance a log line reports, if it reports one.
    static func event(_ line: LineWatcher.Line) -> Event? {
        let assigned = line.text.contains("Partitions assigned")
        guard assigned || line.text.contains("Partitions revoked") else { return nil }
        let partition = try! Regex(#"news\.[a-z]+\[\d+\]"#)
        return Event(
            at: line.at,
            assigned: assigned,
            partitions: line.text.matches(of: partition).map { String(line.text[$0.range]) }
        )
    }

    /// The partitions its "Pause state changed" lines (debug) leave paused in librdkafka at `instant`.
    func paused(at instant: ContinuousClock.Instant) -> Set<String> {
        var paused: Set<String> = []
        for line in stderr.lines where line.at <= instant {
            guard let change = Self.pauseChange(line.text) else { continue }
            paused.formUnion(change.paused)
            paused.subtract(change.resumed)
        }
        return paused
    }

    /// The news partitions a "Pause state changed" line pauses and resumes; nil for other lines.
    static func pauseChange(_ text: String) -> (paused: [String], resumed: [String])? {
        guard text.contains("Pause state changed"), let split = text.range(of: " resumed=") else { return nil }
        let partition = try! Regex(#"news\.[a-z]+\[\d+\]"#)
        let pausing = text[..<split.lowerBound], resuming = text[split.upperBound...]
        return (
            pausing.matches(of: partition).map { String(pausing[$0.range]) },
            resuming.matches(of: partition).map { String(resuming[$0.range]) }
        )
    }

    /// Waits for its first assignment of at least one partition.
    func firstAssignment(timeout: Duration) async -> Event? {
        await assignment(after: startedAt, timeout: timeout)
    }

    /// Waits for an assignment of at least one partition that arrived after `instant`.
    func assignment(after instant: ContinuousClock.Instant, timeout: Duration) async -> Event? {
        let isAssignment = { @Sendable (line: LineWatcher.Line) -> Bool in
            guard let e = Self.event(line) else { return false }
            return e.assigned && !e.partitions.isEmpty && e.at > instant
        }
        return await stderr.first(timeout: timeout, where: isAssignment).flatMap(Self.event)
    }

    /// Waits for the exit (SIGKILL after `timeout`, which fails the test): its pipes end when it does.
    func finish(timeout: Duration) async throws -> (status: Int32, stdout: String, stderr: String, process: Process) {
        guard await stderr.untilEnd(timeout: timeout) else {
            kill(process.processIdentifier, SIGKILL)
            process.reap()
            throw MultiInstanceHarness.Failure("\(name) did not exit within \(timeout)\n\(stderrTail)")
        }
        let status = process.reap()
        _ = await stdout.untilEnd(timeout: .seconds(10))
        return (status, stdout.text, stderr.text, process)
    }

    var stderrTail: String { "\(name) stderr: …" + stderr.text.suffix(2000) }

    /// `sent` in the last metrics line that arrived before `instant` (0 if none).
    func sent(before instant: ContinuousClock.Instant) -> Int {
        stdout.lines.last { $0.at <= instant }.flatMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.text.utf8)) as? [String: Any])?["sent"] as? Int
        } ?? 0
    }
}

/// How long partitions sat unowned while a group rebalanced.
enum RebalanceGaps {
    /// For each partition revoked (from either member) after B started and no later than B's first
    /// assignment: the time from that revoke to the next assignment of it to either member.
    /// Partitions never revoked (cooperative-sticky keeps those that stay) are not listed: they
    /// were never unowned.
    static func joinGaps(
        a: MultiInstanceRun,
        b: MultiInstanceRun,
        bStarted: ContinuousClock.Instant,
        bAssigned: ContinuousClock.Instant
    ) -> [String: Duration] {
        let events = (a.events() + b.events()).sorted { $0.at < $1.at }
        var gaps: [String: Duration] = [:]
        for revoke in events where !revoke.assigned && revoke.at > bStarted && revoke.at <= bAssigned {
            for p in revoke.partitions where gaps[p] == nil {
                if let next = events.first(where: { $0.assigned && $0.at >= revoke.at && $0.partitions.contains(p) }) {
                    gaps[p] = next.at - revoke.at
                }
            }
        }
        return gaps
    }

    static func describe(_ gaps: [String: Duration]) -> String {
        guard !gaps.isEmpty else { return "none" }
        let values = gaps.values.map(seconds)
        let mean = values.reduce(0, +) / Double(values.count)
        return
            "\(gaps.count) partitions, max \(String(format: "%.2f", values.max() ?? 0)) s, mean \(String(format: "%.2f", mean)) s"
    }

    static func format(_ d: Duration) -> String { String(format: "%.1f", seconds(d)) }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
