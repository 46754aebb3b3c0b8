import Broadcast
import Kafka
import News
import PropertyBased
import Synchronization
import TestSupport
import Testing

/// Random interleavings of every event the engine hears, records of every priority for two hubs on
/// partitions that are paused and resumed as their lanes fill and drain. Ground truth is kept here, outside the
/// engine: which sends of which record were delivered or stored as dead letters.
@Suite(.onComputeThreads) struct PipelineEnginePropertyTests {
    /// A test-side model of what really happened to each record.
    struct World {
        var engine: Engine
        var now: Duration = .zero
        var assigned: Set<TopicPartition> = []
        var nextOffset: [TopicPartition: Int64] = [:]
        /// Records of the current assignment of each partition, and their sends still outstanding.
        var epoch: [TopicPartition: [Int64: Set<String>]] = [:]
        /// Sends started and not yet answered, by job id.
        var running: [Engine.JobID: String] = [:]
        var deadLetters: [Engine.JobID: String] = [:]
        var pendingCommit: [TopicPartitionOffset]?
        var committed: [TopicPartition: Int64] = [:]
        var nextRevoke = 0
        var violations: [String] = []
        var pauses = 0

        init() {
            var c = Engine.Configuration()
            c.maxInFlight = 6
            c.maxQueued = 20
            c.minLaneDepth = 3
            c.pacing.maxRate = 2
            c.batchSize = 5
            c.revokeTimeout = .seconds(3)
            c.drainTimeout = .seconds(5)
            engine = Engine(configuration: c)
        }

        /// The offset below which every record of the current assignment is finished; nil while its
        /// first record is not.
        func finishedPrefix(_ p: TopicPartition) -> Int64? {
            var point: Int64?
            for (offset, sends) in (epoch[p] ?? [:]).sorted(by: { $0.key < $1.key }) {
                guard sends.isEmpty else { break }
                point = offset + 1
            }
            return point
        }

        mutating func apply(_ actions: [Engine.Action]) {
            for action in actions {
                switch action {
                case .send(let id, let send): running[id] = send
                case .writeDeadLetter(let id, let record): deadLetters[id] = "\(record.partition)/\(record.offset)"
                case .fetch: break
                case .pause: pauses += 1
                case .resume: break
                case .commit(let offsets):
                    check(offsets, "commit")
                    pendingCommit = offsets
                case .completeRevoke(let id, let offsets):
                    check(offsets, "revoke")
                    for o in offsets { committed[o.topicPartition] = max(committed[o.topicPartition] ?? 0, o.offset) }
                    // Every finished record of the leaving partition is committed before it goes.
                    if let p = revoking.removeValue(forKey: id) {
                        if let prefix = finishedPrefix(p), (committed[p] ?? 0) < prefix {
                            violations.append(
                                "revoke of \(p) released it at \(committed[p] ?? 0) with \(prefix) finished"
                            )
                        }
                        epoch[p] = nil
                    }
                case .finish(let offsets):
                    check(offsets, "finish")
                case .reportHubUnavailable, .reportHubAvailable, .cancelInFlight: break
                }
            }
        }

        /// Never past an unfinished record of the current assignment.
        mutating func check(_ offsets: [TopicPartitionOffset], _ what: String) {
            for o in offsets {
                let unfinished = (epoch[o.topicPartition] ?? [:]).filter { $0.key < o.offset && !$0.value.isEmpty }.keys
                if let first = unfinished.min() {
                    violations.append("\(what) \(o) passes unfinished offset \(first)")
                }
            }
        }

        mutating func step(_ op: Int, _ arg: Int) {
            let partitions = [p0, p1]
            let p = partitions[arg % 2]
            switch op {
            case 0 where assigned.contains(p):
                var records: [Engine.Record] = []
                for _ in 0..<(1 + arg % 4) {
                    let offset = nextOffset[p, default: 0]
                    nextOffset[p] = offset + 1
                    let sends = (0...(arg % 3)).map { "\(p.partition)/\(offset)/\($0)" }
                    if engine.accepts(p) { epoch[p, default: [:]][offset] = Set(sends) }
                    // Any mix of priorities, and now and then a deadline that passes while the sends wait.
                    let priority = Priority(rawValue: (arg / 7 + Int(offset)) % 3) ?? .normal
                    records.append(
                        record(
                            p,
                            offset,
                            sends: sends,
                            priority: priority,
                            freshFor: arg % 5 == 0 ? .milliseconds(300) : nil,
                            // Two hubs, one partition's records going to either: each hub held,
                            // probed and paced on its own, the offsets the engine's.
                            hub: (arg / 3 + Int(offset)) % 2
                        )
                    )
                }
                apply(engine.received(records, now: now))
            case 1, 2, 3, 4:
                guard
                    let (id, send) = running.sorted(by: { $0.key < $1.key }).dropFirst(arg % max(1, running.count))
                        .first
                else { return }
                running[id] = nil
                let outcome: Engine.Outcome =
                    switch op {
                    // A canary refused for good or past its deadline ends as delivered sends do, for the offsets.
                    case 1: arg % 2 == 0 ? .delivered : .finishedElsewhere
                    case 2: .failed(deadLetter(p, 0))
                    case 3: .hubUnavailable(reason: "test")
                    default: .throttled(retryAfter: nil)
                    }
                if op == 1 { markDone(send) }
                if op == 2 { deadLettered[id] = send }
                apply(engine.sendFinished(id, outcome, now: now))
            case 5:
                guard let (id, _) = deadLetters.sorted(by: { $0.key < $1.key }).first else { return }
                deadLetters[id] = nil
                let stored = arg % 4 != 0
                if stored, let send = deadLettered.removeValue(forKey: id) { markDone(send) }
                apply(engine.deadLetterWritten(id, stored: stored, now: now))
            case 6:
                now += .milliseconds(100 * (1 + arg % 30))
                apply(engine.tick(now: now))
            case 7 where assigned.contains(p):
                assigned.remove(p)
                nextRevoke += 1
                revoking[nextRevoke] = p
                apply(engine.revoked([p], id: nextRevoke, now: now))
            case 8 where !assigned.contains(p) && !revoking.values.contains(p):
                assigned.insert(p)
                epoch[p] = [:]
                apply(engine.assigned([p], now: now))
            case 9:
                if let offsets = pendingCommit {
                    pendingCommit = nil
                    let ok = arg % 5 != 0
                    if ok {
                        for o in offsets {
                            committed[o.topicPartition] = max(committed[o.topicPartition] ?? 0, o.offset)
                        }
                    }
                    engine.commitFinished(offsets, succeeded: ok)
                }
            default:
                break
            }
        }

        /// Failed sends waiting for their dead-letter write, by job id.
        var deadLettered: [Engine.JobID: String] = [:]
        var revoking: [Int: TopicPartition] = [:]

        mutating func markDone(_ send: String) {
            let parts = send.split(separator: "/")
            guard parts.count == 3, let partition = Int32(parts[0]), let offset = Int64(parts[1]) else { return }
            let p = TopicPartition(topic: p0.topic, partition: partition)
            epoch[p]?[offset]?.remove(send)
        }
    }

    @Test func committedOffsetsNeverPassAnUnfinishedRecord() async {
        let pauses = Mutex(0)
        await propertyCheck(count: 300, input: Gen.int(in: 0...999).array(of: 20...400)) { ops in
            var world = World()
            world.apply(world.engine.started(now: .zero))
            for value in ops { world.step(value / 100, value % 100) }
            // Then a shutdown: whatever it commits must hold too.
            world.apply(world.engine.shutdownRequested(now: world.now))
            world.apply(world.engine.shutdownRequested(now: world.now))
            #expect(world.violations.isEmpty, "\(world.violations.prefix(3))")
            pauses.withLock { $0 += world.pauses }
        }
        #expect(pauses.withLock { $0 } > 0, "the runs paused partitions as their lanes filled")
    }
}
