import Health
import Kafka
import Testing

@Suite struct HealthStateTests {
    static let world0 = TopicPartition(topic: "news.world", partition: 0)
    static let world1 = TopicPartition(topic: "news.world", partition: 1)

    static func consumer() -> HealthState { HealthState(configuration: .init(consumes: true), now: .zero) }

    static func failed(_ verdict: HealthState.Verdict) -> [String] {
        verdict.checks.filter { !$0.passed && $0.decides }.map(\.name)
    }

    @Test func aMemberThatIsJoiningIsReady() {
        let state = Self.consumer()
        #expect(state.readiness(now: .seconds(1)).healthy)
        #expect(
            state.readiness(now: .seconds(1)).checks.first { $0.name == "partitions" }?.detail == "joining the group"
        )
    }

    @Test func aMemberWithoutPartitionsIsReadySoARolloutsSurgePodCanFinish() {
        var state = Self.consumer()
        state.assigned([])
        let idle = state.readiness(now: .zero)
        #expect(idle.healthy)
        #expect(idle.checks.first { $0.name == "partitions" }?.detail.hasPrefix("none assigned") == true)
        state.assigned([Self.world0])
        #expect(state.readiness(now: .zero).checks.first { $0.name == "partitions" }?.detail == "1 assigned")
    }

    @Test func thePartitionsCheckSaysWhereTheMemberIsInARebalance() {
        var state = Self.consumer()
        let partitions = { (state: HealthState) in
            state.readiness(now: .zero).checks.first { $0.name == "partitions" }?.detail
        }
        state.assigned([Self.world0, Self.world1])
        state.revoked([Self.world0])
        #expect(partitions(state) == "1 assigned")
        state.revoked([Self.world1])
        #expect(partitions(state) == "joining the group", "eager rebalance: everything goes, then comes back")
        // Cooperative rebalance that leaves this member nothing: idle, and ready all the same.
        state.assigned([])
        #expect(partitions(state)?.hasPrefix("none assigned") == true)
        #expect(state.readiness(now: .zero).healthy)
    }

    @Test func theHubsStateIsSaidInBothProbesButDecidesNeither() {
        var state = Self.consumer()
        state.assigned([Self.world0])
        state.hubUnavailable(reason: "HTTP 401")
        for verdict in [state.readiness(now: .zero), state.liveness(now: .zero)] {
            #expect(
                verdict.healthy,
                "an outage of the hub is no reason to restart the process, nor to hold up a rollout or a drain"
            )
            #expect(verdict.reasons.isEmpty)
            #expect(verdict.notes == ["hub: unavailable: HTTP 401"])
            #expect(verdict.json.contains(#""notes":["hub: unavailable: HTTP 401"]"#), "\(verdict.json)")
        }
        state.hubAvailable()
        #expect(state.readiness(now: .zero).notes.isEmpty)
    }

    @Test func severalHubsHaveACheckEachThatDecidesNothing() {
        var configuration = HealthState.Configuration(consumes: true)
        configuration.hubs = ["eu", "us"]
        var state = HealthState(configuration: configuration, now: .zero)
        state.assigned([Self.world0])
        state.hubUnavailable("us", reason: "HTTP 401")
        let verdict = state.readiness(now: .zero)
        #expect(verdict.healthy, "one hub's outage holds only its items")
        #expect(verdict.notes == ["hub:us: unavailable: HTTP 401"])
        #expect(verdict.checks.contains { $0.name == "hub:eu" && $0.passed && $0.detail == "available" })
        #expect(!verdict.checks.contains { $0.name == "hub" }, "no unnamed hub check beside the named ones")
        state.hubUnavailable("eu", reason: "no answer")
        #expect(
            state.liveness(now: .zero).notes == ["hub:eu: unavailable: no answer", "hub:us: unavailable: HTTP 401"]
        )
        state.hubAvailable("us")
        #expect(state.readiness(now: .zero).notes == ["hub:eu: unavailable: no answer"])
    }

    @Test func aStoreThatDoesNotAnswerMakesTheBackendUnready() {
        var config = HealthState.Configuration(consumes: false)
        config.dependencies = ["store"]
        var state = HealthState(configuration: config, now: .zero)
        #expect(
            state.readiness(now: .zero).reasons == ["store: not answering: not checked yet"],
            "not ready before the store was asked"
        )
        state.dependencyAnswered("store")
        #expect(state.readiness(now: .zero).healthy)
        state.dependencyFailed("store", reason: "connection refused")
        #expect(state.readiness(now: .zero).reasons == ["store: not answering: connection refused"])
        #expect(state.liveness(now: .zero).healthy, "alive all the same")
        state.dependencyAnswered("store")
        #expect(state.readiness(now: .zero).healthy)
    }

    /// `run` is ready once a broker has answered, and not while none does; partitions or not.
    @Test func kafkaNotAnsweringMakesRunUnready() {
        var config = HealthState.Configuration(consumes: true)
        config.dependencies = ["kafka"]
        var state = HealthState(configuration: config, now: .zero)
        state.polled(turns: 1, now: .zero)
        #expect(state.readiness(now: .zero).reasons == ["kafka: not answering: not checked yet"])
        state.dependencyAnswered("kafka")
        #expect(state.readiness(now: .zero).healthy, "ready without partitions: joining")
        state.dependencyFailed("kafka", reason: "no answer for 5 s")
        #expect(state.readiness(now: .zero).reasons == ["kafka: not answering: no answer for 5 s"])
        #expect(state.liveness(now: .zero).healthy, "alive all the same: a restart would not bring Kafka back")
        state.dependencyAnswered("kafka")
        #expect(state.readiness(now: .zero).healthy)
    }

    @Test func aFailedDeadLetterWriteMakesItUnreadyUntilOneSucceeds() {
        var state = Self.consumer()
        state.deadLetterWriteFailed(reason: "No space left on device")
        #expect(Self.failed(state.readiness(now: .zero)) == ["deadLetters"])
        state.deadLetterWritten()
        #expect(state.readiness(now: .zero).healthy)
    }

    @Test func aPollLoopThatStopsTurningIsNotAliveAndNotReady() {
        var state = Self.consumer()
        let limit = state.configuration.pollStallLimit
        state.polled(turns: 1, now: .seconds(1))
        state.polled(turns: 9, now: .seconds(5))
        #expect(state.liveness(now: .seconds(5) + limit).healthy, "at the limit it still counts as turning")
        state.polled(turns: 9, now: .seconds(5) + limit + .seconds(1))
        let dead = state.liveness(now: .seconds(5) + limit + .seconds(1))
        #expect(!dead.healthy)
        #expect(dead.reasons == ["pollLoop: no turn for 31 s"])
        #expect(Self.failed(state.readiness(now: .seconds(5) + limit + .seconds(1))) == ["pollLoop"])
        // It turns again: alive again.
        state.polled(turns: 10, now: .seconds(60))
        #expect(state.liveness(now: .seconds(60)).healthy)
    }

    @Test func aLoopThatNeverTurnsIsCaughtFromTheStart() {
        let state = Self.consumer()
        #expect(!state.liveness(now: state.configuration.pollStallLimit + .seconds(1)).healthy)
    }

    @Test func aServerWithoutAConsumerIsAliveAndReady() {
        var state = HealthState(configuration: .init(consumes: false), now: .zero)
        state.assigned([])
        #expect(state.liveness(now: .seconds(3600)).healthy)
        #expect(state.readiness(now: .seconds(3600)).healthy)
    }

    @Test func severalFailuresAreAllReported() {
        var state = Self.consumer()
        state.assigned([])
        state.hubUnavailable(reason: "connection refused")
        state.deadLetterWriteFailed(reason: "broker down")
        state.polled(turns: 1, now: .zero)
        let limit = state.configuration.pollStallLimit + .seconds(1)
        #expect(
            state.readiness(now: limit).reasons == [
                "pollLoop: no turn for 31 s", "deadLetters: write failed: broker down",
            ]
        )
        #expect(state.readiness(now: limit).notes == ["hub: unavailable: connection refused"])
    }
}
