import Synchronization
import Testing
import Threads

@Suite struct JoinableThreadTests {
    @Test func joinReturnsOnlyAfterTheBodyHasReturned() {
        // The body's last write is seen after `join` with no other synchronisation: the join is
        // the happens-before edge (the thread sanitizer checks it in `make tsan`).
        final class Box: @unchecked Sendable { var value = 0 }
        let box = Box()
        let thread = JoinableThread(name: "hubcast-test-thread-with-a-long-name")
        #expect(thread.start { for i in 1...100_000 { box.value = i } })
        thread.join()
        #expect(box.value == 100_000)
        thread.join()
    }

    @Test func aSecondStartDoesNothingAndAnUnstartedJoinReturns() {
        let runs = Atomic(0)
        let thread = JoinableThread(name: "twice")
        #expect(thread.start { runs.add(1, ordering: .relaxed) })
        #expect(!thread.start { runs.add(1, ordering: .relaxed) })
        thread.join()
        #expect(runs.load(ordering: .relaxed) == 1)
        JoinableThread(name: "never").join()
    }

    @Test func twoJoinersBothWaitForTheEnd() async {
        let release = Atomic(false)
        let ended = Atomic(false)
        let thread = JoinableThread(name: "joined-twice")
        thread.start {
            while !release.load(ordering: .acquiring) {}
            ended.store(true, ordering: .releasing)
        }
        let first = JoinableThread(name: "first-joiner")
        let second = JoinableThread(name: "second-joiner")
        let seen = Atomic(0)
        for joiner in [first, second] {
            joiner.start {
                thread.join()
                if ended.load(ordering: .acquiring) { seen.add(1, ordering: .relaxed) }
            }
        }
        release.store(true, ordering: .releasing)
        first.join()
        second.join()
        #expect(seen.load(ordering: .relaxed) == 2)
    }
}
