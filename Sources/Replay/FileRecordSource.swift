import Broadcast
import Kafka
import News
import Synchronization

/// A dead-letter file as a record source: its lines are the records of one synthetic partition
/// (offset = line number), so the engine tracks them as it tracks Kafka records. A file has no
/// group to commit to: an interrupted replay from a file starts again from its first line.
final class FileRecordSource: RecordSource {
    static let partition = TopicPartition(topic: "file", partition: 0)

    private let reader: LineReader
    private let totalLines: Int
    private let linesRead = Atomic<Int>(0)

    init(reader: LineReader, totalLines: Int) {
        self.reader = reader
        self.totalLines = totalLines
    }

    func setRebalanceHandlers(_ handlers: RebalanceHandlers) {
        handlers.onAssign([Self.partition])
    }

    func nextBatch(max: Int, timeout: Duration) async -> SourceBatch {
        let lines = await reader.next(max: max)
        guard !lines.isEmpty else { return .finished }
        linesRead.add(lines.count, ordering: .relaxed)
        return .records(
            lines.map {
                KafkaMessage(
                    topic: Self.partition.topic,
                    partition: Self.partition.partition,
                    offset: Int64($0.number),
                    value: $0.bytes
                )
            }
        )
    }

    // The file is read only by `nextBatch`: its reader is asynchronous.
    func takeReady(max: Int) -> [KafkaMessage] { [] }

    func commit(_ offsets: [TopicPartitionOffset]) async throws {}

    var lag: Int64 { Int64(max(0, totalLines - linesRead.load(ordering: .relaxed))) }

    // One partition, read only as fast as the engine asks: there is nothing to hold back.
    func pause(_ partitions: [TopicPartition]) {}
    func resume(_ partitions: [TopicPartition]) {}
}

/// A dry run reads like a replay but leaves the group's position alone, so the real replay
/// still sees every record.
struct NonCommittingSource: RecordSource {
    let base: any RecordSource

    func setRebalanceHandlers(_ handlers: RebalanceHandlers) {
        // A copy with the revoke's offsets dropped: the rest passes through as it is.
        var dry = handlers
        dry.onRevoke = {
            _ = handlers.onRevoke($0)
            return []
        }
        base.setRebalanceHandlers(dry)
    }

    func nextBatch(max: Int, timeout: Duration) async -> SourceBatch {
        await base.nextBatch(max: max, timeout: timeout)
    }
    func takeReady(max: Int) -> [KafkaMessage] { base.takeReady(max: max) }
    func commit(_ offsets: [TopicPartitionOffset]) async throws {}
    var lag: Int64 { base.lag }
    func pause(_ partitions: [TopicPartition]) throws { try base.pause(partitions) }
    func resume(_ partitions: [TopicPartition]) throws { try base.resume(partitions) }
}
