import Broadcast
import Foundation
import Kafka
import News

typealias Engine = PipelineEngine<String>

let p0 = TopicPartition(topic: "news.world", partition: 0)
let p1 = TopicPartition(topic: "news.world", partition: 1)

func record(
    _ partition: TopicPartition,
    _ offset: Int64,
    sends: [String],
    priority: Priority = .normal,
    freshFor: Duration? = nil,
    hub: Int = 0
) -> Engine.Record {
    Engine.Record(
        position: RecordPosition(partition, offset: offset),
        work: .sends(sends, priority: priority, freshFor: freshFor, hub: hub)
    )
}

func deadLetter(_ partition: TopicPartition, _ offset: Int64) -> DeadLetterRecord {
    DeadLetterRecord(
        reason: "invalid",
        error: "test",
        message: Array("x".utf8),
        source: KafkaMessage(topic: partition.topic, partition: partition.partition, offset: offset, value: [])
    )
}

func seconds(_ s: Double) -> Duration { .milliseconds(Int64(s * 1000)) }

/// What a sequence of actions asked for, collected for assertions.
struct Performed {
    var sends: [(id: Engine.JobID, send: String)] = []
    var deadLetters: [(id: Engine.JobID, record: DeadLetterRecord)] = []
    var fetches = 0
    /// Each fetch's `max`.
    var fetchSizes: [Int] = []
    var paused: [TopicPartition] = []
    var resumed: [TopicPartition] = []
    var commits: [[TopicPartitionOffset]] = []
    var revokes: [(id: Engine.RevokeID, commit: [TopicPartitionOffset])] = []
    var hubUnavailable = 0
    var hubAvailable = 0
    var cancelled = false
    var finished: [TopicPartitionOffset]?

    init(_ actions: [Engine.Action] = []) { add(actions) }

    mutating func add(_ actions: [Engine.Action]) {
        for action in actions {
            switch action {
            case .send(let id, let send): sends.append((id, send))
            case .writeDeadLetter(let id, let record): deadLetters.append((id, record))
            case .fetch(let max):
                fetches += 1
                fetchSizes.append(max)
            case .pause(let partitions): paused += partitions
            case .resume(let partitions): resumed += partitions
            case .commit(let offsets): commits.append(offsets)
            case .completeRevoke(let id, let offsets): revokes.append((id, offsets))
            case .reportHubUnavailable: hubUnavailable += 1
            case .reportHubAvailable: hubAvailable += 1
            case .cancelInFlight: cancelled = true
            case .finish(let offsets): finished = offsets
            }
        }
    }

    func id(of send: String) -> Engine.JobID? { sends.last { $0.send == send }?.id }
}

extension Array where Element == TopicPartitionOffset {
    func offset(of partition: TopicPartition) -> Int64? { last { $0.topicPartition == partition }?.offset }
}
