import News
import TestSupport
import Testing
import TextFormats

@testable import NotificationHubs

/// Whatever text an item carries, the parser answers with a tree or `Invalid`: it never crashes.
@Suite(.onComputeThreads) struct TagExpressionFuzzTests {
    /// 20,000 cases in two seeded shards, so the test uses both cores; each shard is reproducible alone.
    static let shards = 2
    static let casesPerShard = 10_000

    @Test(arguments: 0..<shards)
    func randomAndAdversarialExpressionsParseAndRoundTripOrAreRefused(shard: Int) async {
        var rng = SeededGenerator(seed: 0x14_0006 + UInt64(shard))
        var parsed = 0, refused = 0, refusedForDepth = 0
        for i in 0..<Self.casesPerShard {
            // CPU-bound on the cooperative pool: let the suite's other tests (in-process servers) run.
            if i % 20 == 0 { await Task.yield() }
            // The first case of each shard is a 100,000-tag OR list, the longest `users`-like audience.
            let text = i == 0 ? ExpressionFuzzer.orList(count: 99_999, &rng) : ExpressionFuzzer.make(&rng)
            let shown = "shard \(shard) case \(i): \(LegibleText.quoted(text.prefix(80)))"
            do {
                let expression = try TagExpression.parseUnlimited(text)
                parsed += 1
                check(expression, shown: shown, &rng)
                checkAudience(text, shown: shown)
            } catch {
                refused += 1
                // The client lets a lone tag through without the parser: never one the parser refuses.
                #expect(!TagSyntax.isTag(text), "\(shown): a lone tag the parser refuses")
                if error.reason.hasPrefix("nests") { refusedForDepth += 1 }
                if let column = error.column {
                    #expect((1...text.utf8.count + 1).contains(column), "\(shown): column \(column)")
                }
                #expect(
                    error.description.unicodeScalars.allSatisfy(LegibleText.isLegible),
                    "\(shown): \(LegibleText.quoted(error.description))"
                )
            }
        }
        // Every kind of outcome happened, so the generator is not feeding one path only.
        #expect(
            parsed > 2_500 && refused > 2_500 && refusedForDepth > 250,
            "parsed \(parsed), refused \(refused) (\(refusedForDepth) for depth)"
        )
    }

    /// The canonical text parses back to the same tree; the walks hold on whatever parsed.
    private func check(_ expression: TagExpression, shown: String, _ rng: inout SeededGenerator) {
        let canonical = expression.description
        do {
            let again = try TagExpression.parseUnlimited(canonical)
            #expect(again == expression, "\(shown)")
            #expect(again.description == canonical, "\(shown)")
        } catch {
            Issue.record(
                "\(shown): its description \(LegibleText.quoted(canonical.prefix(80))) does not parse: \(error)"
            )
        }
        let tags = expression.tags
        #expect(!tags.isEmpty && tags.allSatisfy(TagSyntax.isTag), "\(shown)")
        let device = Set(tags.filter { _ in Bool.random(using: &rng) })
        let matched = expression.matches(device)
        // The device carries only tags of the expression, so an OR list matches exactly when it carries any.
        if expression.isOrOnly { #expect(matched == !device.isEmpty, "\(shown)") }
    }

    /// Whatever `Audience` accepts goes out as expressions within NH's limits.
    private func checkAudience(_ text: String, shown: String) {
        guard let audience = try? Audience(expression: text) else { return }
        #expect(!audience.expressions.isEmpty, "\(shown)")
        for expression in audience.expressions {
            #expect(
                (try? TagExpression(parsing: expression)) != nil,
                "\(shown): \(LegibleText.quoted(expression.prefix(80)))"
            )
        }
    }
}
