import Synchronization
import Testing
@testable import Threads

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

    @Test func aThreadJoiningItselfGoesOnAndEnds() async {
        // As when its body lets go of the last reference to an owner that joins in `deinit`:
        // pthread_join would refuse (EDEADLK); the join returns, and the thread is detached.
        let thread = JoinableThread(name: "joins-itself")
        let (returned, returning) = AsyncStream.makeStream(of: Void.self)
        thread.start {
            thread.join()
            returning.yield()
            returning.finish()
        }
        var iterator = returned.makeAsyncIterator()
        #expect(await iterator.next() != nil)
        thread.join()
    }

    @Test func namesAreCutToLinuxsFifteenBytesOnWholeCharacters() {
        #expect(JoinableThread(name: "hubcast-kafka-producer").name == "hubcast-kafka-p")
        #expect(JoinableThread(name: "hubcast-curl").name == "hubcast-curl")
        #expect(JoinableThread(name: "nouvelles-été-ok").name == "nouvelles-été")
        // The 15th byte would be the first half of "é".
        #expect(JoinableThread(name: "abcdefghijklmné").name == "abcdefghijklmn")
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
