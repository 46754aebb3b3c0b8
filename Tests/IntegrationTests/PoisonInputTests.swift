import Foundation
import TestSupport
import Testing

/// A crafted tag expression is refused by the binary with a clear error, never a crash.
@Suite(.serialized) struct PoisonInputTests {
    static let deepExpression = String(repeating: "(", count: 32_000) + "World" + String(repeating: ")", count: 32_000)
    static let depthError = "tag expression: nests '(' and '!' more than 64 levels deep at column 65"

    @Test func sendRefusesThirtyTwoThousandNestedParenthesesWithExit2() async throws {
        let result = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "x", "--tag-expression", Self.deepExpression],
            environment: SendCommandTests.environment(port: 1)
        )
        #expect(result.status == 2, "\(result.stderr.prefix(300))")
        #expect(result.stderr == "hubcast: --tag-expression: \(Self.depthError)\n")
        #expect(result.stdout.isEmpty)
    }

    @Test func sendShowsAControlCharacterInAnExpressionEscaped() async throws {
        let result = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "x", "--tag-expression", "World\u{1B}[31m"],
            environment: SendCommandTests.environment(port: 1)
        )
        #expect(result.status == 2)
        #expect(result.stderr == "hubcast: --tag-expression: tag expression: unexpected U+001B at column 6\n")
    }

    @Test func produceRejectsTheLineAndPublishesTheRest() async throws {
        let broker = try await DevBrokerProcess(partitions: 1)
        let deep = #"{"id":"deep","headline":"h","category":"World","tagExpression":""# + Self.deepExpression + #""}"#
        let good = #"{"id":"good","headline":"h","category":"World","tagExpression":"World && !Sports"}"#
        let result = try await HubcastBinary.run(
            ["produce", "--brokers", broker.bootstrap],
            stdin: deep + "\n" + good + "\n"
        )
        #expect(result.status == 1, "a rejected line makes the run fail")
        #expect(result.stdout == "sent 1, rejected 1, failed 0\n")
        #expect(
            result.stderr.contains(
                #"hubcast produce: line 1: field "tagExpression" nests '(' and '!' more than 64 levels deep at column 65"#
            ),
            "\(result.stderr.prefix(400))"
        )
        #expect(broker.stop() == 0)
    }
}
