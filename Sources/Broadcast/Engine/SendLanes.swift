import DequeModule
import News

/// Sends waiting to start, in the order they go: the most urgent priority first; within one
/// priority the topics (so the categories) in turn, and within a topic its partitions in turn, one
/// send each, so that a backlog in one category never holds back another however many partitions
/// it has. A send that must go again goes first in its partition.
///
/// No priority waits forever: a lower one passed over `reserveEvery - 1` times in a row while it
/// had sends waiting takes the next start (the one after, if the other lower one is due too), so
/// `normal` and `bulk` each get at least one start in `reserveEvery + 1` whatever is above them.
///
/// Partitions are small integers (slots) and topics small integers (groups) given by the engine,
/// so that taking a send hashes nothing.
struct SendLanes<Job: LaneJob>: Sendable {
    /// About one start in this many goes to each lower priority that has sends waiting.
    let reserveEvery: Int
    /// [priority][slot]: the sends of one partition at one priority, oldest first.
    private var queues: [[Deque<Job>]]
    /// Per priority, the groups that have sends waiting, in the order they take turns.
    private var groupTurns: [Deque<Int>]
    /// [priority][group]: the group's slots that have sends waiting, in the order they take turns.
    private var slotTurns: [[Deque<Int>]]
    /// Per priority, starts since it last started while it had sends waiting.
    private var passedOver: [Int]
    /// The group of each slot.
    private var groupOf: [Int] = []
    /// Sends waiting per slot, every priority together.
    private(set) var waiting: [Int] = []
    private(set) var count = 0

    init(reserveEvery: Int = 20) {
        self.reserveEvery = max(2, reserveEvery)
        let levels = Priority.allCases.count
        queues = Array(repeating: [], count: levels)
        groupTurns = Array(repeating: [], count: levels)
        slotTurns = Array(repeating: [], count: levels)
        passedOver = Array(repeating: 0, count: levels)
    }

    var isEmpty: Bool { count == 0 }

    func count(of priority: Priority) -> Int {
        queues[priority.rawValue].reduce(0) { $0 + $1.count }
    }

    /// Gives a slot its group (its topic); once, before its first send.
    mutating func register(slot: Int, group: Int) {
        if slot >= waiting.count {
            let added = slot + 1 - waiting.count
            for p in queues.indices { queues[p].append(contentsOf: repeatElement(Deque(), count: added)) }
            waiting.append(contentsOf: repeatElement(0, count: added))
            groupOf.append(contentsOf: repeatElement(0, count: added))
        }
        groupOf[slot] = group
        for p in slotTurns.indices where group >= slotTurns[p].count {
            slotTurns[p].append(contentsOf: repeatElement(Deque(), count: group + 1 - slotTurns[p].count))
        }
    }

    /// A new send: last in its partition's line.
    mutating func append(_ job: Job) {
        let p = job.priority.rawValue, slot = job.slot
        if queues[p][slot].isEmpty { takeTurns(p, slot, first: false) }
        queues[p][slot].append(job)
        waiting[slot] += 1
        count += 1
    }

    /// A send that goes again (held for the hub, its Retry-After over): ahead of every newer send
    /// of its partition, so the sends that go again keep their order; its partition (and its
    /// group) take the first turn if they had none.
    mutating func putBack(_ job: Job) {
        let p = job.priority.rawValue, slot = job.slot
        if queues[p][slot].isEmpty { takeTurns(p, slot, first: true) }
        // Those going again are few and at the front: the walk is short.
        var index = queues[p][slot].startIndex
        while index < queues[p][slot].endIndex, queues[p][slot][index].age < job.age { index += 1 }
        queues[p][slot].insert(job, at: index)
        waiting[slot] += 1
        count += 1
    }

    /// The priority whose send starts next, nil when nothing waits.
    func nextPriority() -> Priority? {
        // The reserve: the least urgent first, so that neither lower one waits for the other.
        for priority in Priority.allCases where priority != .breaking {
            let p = priority.rawValue
            if !groupTurns[p].isEmpty, passedOver[p] >= reserveEvery - 1 { return priority }
        }
        return Priority.mostUrgentFirst.first { !groupTurns[$0.rawValue].isEmpty }
    }

    /// The send that `popFirst(priority)` would return.
    func first(_ priority: Priority) -> Job? {
        let p = priority.rawValue
        guard let group = groupTurns[p].first, let slot = slotTurns[p][group].first else { return nil }
        return queues[p][slot].first
    }

    /// Takes the next send of `priority` (from the group and partition whose turn it is) and
    /// passes both turns on.
    mutating func popFirst(_ priority: Priority) -> Job? {
        let p = priority.rawValue
        guard let group = groupTurns[p].popFirst() else { return nil }
        guard let slot = slotTurns[p][group].popFirst(), let job = queues[p][slot].popFirst() else { return nil }
        if !queues[p][slot].isEmpty { slotTurns[p][group].append(slot) }
        if !slotTurns[p][group].isEmpty { groupTurns[p].append(group) }
        waiting[slot] -= 1
        count -= 1
        for q in passedOver.indices where q != p { passedOver[q] = groupTurns[q].isEmpty ? 0 : passedOver[q] + 1 }
        passedOver[p] = 0
        return job
    }

    /// Drops every send of one partition (it left).
    mutating func removeAll(slot: Int) {
        guard slot < waiting.count, waiting[slot] > 0 else { return }
        let group = groupOf[slot]
        for p in queues.indices where !queues[p][slot].isEmpty {
            queues[p][slot].removeAll()
            slotTurns[p][group].removeAll { $0 == slot }
            if slotTurns[p][group].isEmpty { groupTurns[p].removeAll { $0 == group } }
            if groupTurns[p].isEmpty { passedOver[p] = 0 }
        }
        count -= waiting[slot]
        waiting[slot] = 0
    }

    mutating func removeAll() {
        for slot in waiting.indices { removeAll(slot: slot) }
    }

    /// A slot that had no sends of priority `p` gets a turn in its group, and its group one.
    private mutating func takeTurns(_ p: Int, _ slot: Int, first: Bool) {
        let group = groupOf[slot]
        if slotTurns[p][group].isEmpty {
            if first { groupTurns[p].prepend(group) } else { groupTurns[p].append(group) }
        }
        if first { slotTurns[p][group].prepend(slot) } else { slotTurns[p][group].append(slot) }
    }
}

/// A send in a lane; `age` grows with the order sends arrived in; `slot` is its partition's.
protocol LaneJob: Sendable {
    var age: Int { get }
    var priority: Priority { get }
    var slot: Int { get }
}
