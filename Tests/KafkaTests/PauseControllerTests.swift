import Testing

@testable import Kafka

@Suite struct PauseControllerTests {
    let p0 = TopicPartition(topic: "t", partition: 0)
    let p1 = TopicPartition(topic: "t", partition: 1)

    @Test func aBrieflyFullBufferHoldsThePollLoopWithoutPausing() {
        var c = PauseController(capacity: 10, pauseAfter: .seconds(1))
        c.assigned([p0, p1])
        #expect(!c.shouldHold(buffered: 9, fullFor: .zero))
        #expect(c.shouldHold(buffered: 10, fullFor: .milliseconds(999)))
        #expect(c.reconcile(buffered: 10, fullFor: .milliseconds(999)).isEmpty)
        // Full for the whole grace period: pause, and poll on (rebalances must be served).
        #expect(!c.shouldHold(buffered: 10, fullFor: .seconds(1)))
        #expect(c.reconcile(buffered: 10, fullFor: .seconds(1)) == .init(pause: [p0, p1]))
        #expect(!c.shouldHold(buffered: 10, fullFor: .seconds(5)))
    }

    @Test func aPartitionPausedWhenItLeftIsResumedWhenItComesBack() {
        var c = PauseController(capacity: 10, pauseAfter: .seconds(1))
        c.assigned([p0, p1])
        #expect(c.reconcile(buffered: 10, fullFor: .seconds(1)) == .init(pause: [p0, p1]))
        // Revoked while paused by backpressure; librdkafka keeps the flag; p0 comes back.
        c.revoked([p0, p1])
        c.assigned([p0])
        #expect(c.reconcile(buffered: 0) == .init(resume: [p0]), "p0 must be resumed explicitly")
        #expect(c.paused.isEmpty)
    }

    @Test func backpressurePausesEverythingWithHysteresis() {
        var c = PauseController(capacity: 10, pauseAfter: .zero)
        c.assigned([p0, p1])
        #expect(c.reconcile(buffered: 9).isEmpty)
        #expect(c.reconcile(buffered: 10) == .init(pause: [p0, p1]))
        // Still above half: stays paused.
        #expect(c.reconcile(buffered: 6).isEmpty)
        #expect(c.reconcile(buffered: 5) == .init(resume: [p0, p1]))
    }

    @Test func userPausesSurviveBackpressureEnding() {
        var c = PauseController(capacity: 4, pauseAfter: .zero)
        c.assigned([p0, p1])
        c.pauseByUser([p1])
        #expect(c.reconcile(buffered: 0) == .init(pause: [p1]))
        #expect(c.reconcile(buffered: 4) == .init(pause: [p0]))
        #expect(c.reconcile(buffered: 0) == .init(resume: [p0]))
        c.resumeByUser([p1])
        #expect(c.reconcile(buffered: 0) == .init(resume: [p1]))
    }

    @Test func aPauseForAPartitionThatLeftIsDroppedSoItComesBackRunning() {
        var c = PauseController(capacity: 4)
        c.assigned([p0, p1])
        c.revoked([p0])
        // The application asks, late, to pause what it no longer owns.
        #expect(c.pauseByUser([p0, p1]) == [p1])
        #expect(c.reconcile(buffered: 0) == .init(pause: [p1]))
        c.assigned([p0])
        #expect(c.reconcile(buffered: 0).isEmpty, "p0 comes back running")
    }

    @Test func revokedPartitionsAreForgotten() {
        var c = PauseController(capacity: 4)
        c.assigned([p0, p1])
        c.pauseByUser([p0])
        _ = c.reconcile(buffered: 0)
        c.revoked([p0])
        #expect(c.paused.isEmpty)
        #expect(c.assignment == [p1])
        // Reassigned later, it is resumed explicitly (librdkafka kept its flag): the user's pause
        // belonged to the old assignment.
        c.assigned([p0])
        #expect(c.reconcile(buffered: 0) == .init(resume: [p0]))
        #expect(c.reconcile(buffered: 0).isEmpty)
        // A partition that left running comes back untouched.
        c.revoked([p1])
        c.assigned([p1])
        #expect(c.reconcile(buffered: 0).isEmpty)
    }
}
