import Testing

@testable import Kafka

@Suite struct HandleLifecycleTests {
    @Test func aHandleIsDestroyedExactlyOnceAfterItsLastUserLeaves() {
        var h = HandleLifecycle()
        let entered = [h.enter(), h.enter()]
        #expect(entered == [true, true])
        let first = h.close()
        #expect(first == .waitForUsers)
        let late = h.enter()
        #expect(!late, "no new call once closing")
        let notLast = h.leave()
        #expect(!notLast)
        let second = h.close()
        #expect(second == .waitForUsers)
        #expect(h.isWaitingForUsers)
        let last = h.leave()
        #expect(last, "the last call to leave wakes destroy")
        #expect(!h.isWaitingForUsers)
        let third = h.close()
        #expect(third == .destroyNow)
        let again = h.close()
        #expect(again == .nothing, "never twice")
        let afterDestroy = h.enter()
        #expect(!afterDestroy)
    }

    @Test func anIdleHandleIsDestroyedAtOnce() {
        var h = HandleLifecycle()
        let action = h.close()
        #expect(action == .destroyNow)
        #expect(!h.isOpen)
    }

    @Test func durationsKeepTheirMilliseconds() {
        #expect(Duration.milliseconds(500).inMilliseconds == 500)
        #expect(Duration.milliseconds(500).timeoutMs == 500)
        #expect(Duration.seconds(3).inMilliseconds == 3000)
        #expect(Duration.seconds(Int64.max / 2).timeoutMs == Int32.max)
    }
}
