import Broadcast
import News
import NotificationHubs
import TestSupport
import Testing
import TextFormats

/// Nothing a message holds can crash the decoder or the planner: each ends as sends or a typed error.
@Suite(.onComputeThreads) struct PlannerFuzzTests {
    /// 100,000 items in four seeded shards, so the test uses every core; each shard is reproducible alone.
    static let shards = 4
    static let itemsPerShard = 25_000

    @Test(arguments: 0..<shards)
    func oneHundredThousandGeneratedItemsDecodeAndPlanOrAreRefused(shard: Int) async {
        var rng = SeededGenerator(seed: 0x14_0006_0B + UInt64(shard))
        let decoder = NewsItemDecoder()
        var valid = 0, decoded = 0, planned = 0, sends = 0, refusedByDecoder = 0, refusedByPlanner = 0
        for i in 0..<Self.itemsPerShard {
            // CPU-bound on the cooperative pool: let the suite's other tests (in-process servers) run.
            if i % 20 == 0 { await Task.yield() }
            let (bytes, intent) = NewsItemFuzzer.make(&rng)
            if intent == .valid { valid += 1 }
            let item: NewsItem
            do {
                item = try decoder.decode(bytes)
            } catch {
                refusedByDecoder += 1
                #expect(
                    intent != .valid,
                    "shard \(shard) item \(i) was built valid: \(LegibleText.sanitized(error.description))"
                )
                continue
            }
            decoded += 1
            do {
                let sendsOfItem = try SendPlanner.plan(item, category: item.category ?? "World")
                planned += 1
                sends += sendsOfItem.count
                #expect(!sendsOfItem.isEmpty, "shard \(shard) item \(i)")
                // What goes to the hub is within its limits, whatever came in (the first and last
                // chunk of a long list stand for the rest: checking all 50 doubled the test's time).
                for send in [sendsOfItem.first, sendsOfItem.last].compactMap({ $0 })
                where (try? TagExpression(parsing: send.tagExpression)) == nil {
                    Issue.record(
                        "shard \(shard) item \(i): planned \(LegibleText.quoted(send.tagExpression.prefix(80))) is not a valid NH expression"
                    )
                }
            } catch {
                refusedByPlanner += 1
                #expect(intent != .valid, "shard \(shard) item \(i) was built valid: \(error)")
            }
        }
        // Every path was taken many times, so a generator change cannot quietly test nothing.
        #expect(
            valid > 8_750 && planned >= valid && refusedByDecoder > 5_000 && refusedByPlanner > 750,
            "valid \(valid), decoded \(decoded), planned \(planned) (\(sends) sends), refused by decoder \(refusedByDecoder), by planner \(refusedByPlanner)"
        )
    }

    @Test func thirtyTwoThousandParenthesesAreAnInvalidItemNotACrash() throws {
        let expression = String(repeating: "(", count: 32_000) + "World" + String(repeating: ")", count: 32_000)
        let item = try NewsItemDecoder().decode(
            NewsItem(id: "deep", headline: "h", category: "World", tagExpression: expression).json
        )
        #expect {
            try SendPlanner.plan(item, category: "World")
        } throws: { error in
            if case .audience = error as? SendPlanner.Refusal { return true }
            return false
        }
        do {
            _ = try SendPlanner.plan(item, category: "World")
        } catch {
            #expect(error.description == "tag expression: nests '(' and '!' more than 64 levels deep at column 65")
        }
    }

    @Test func deeplyNestedJSONIsMalformedNotACrash() {
        let deep = Array((String(repeating: "[", count: 30_000) + String(repeating: "]", count: 30_000)).utf8)
        #expect(throws: NewsItemError.self) { try NewsItemDecoder().decode(deep) }
        do {
            _ = try NewsItemDecoder().decode(deep)
        } catch {
            #expect(error.kind == .malformedJSON)
            #expect(error.reason == "not valid JSON: nesting deeper than 64 levels at byte 64")
        }
    }
}
