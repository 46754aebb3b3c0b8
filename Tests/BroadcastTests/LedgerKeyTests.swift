import Kafka
import PropertyBased
import Testing

@testable import Broadcast

/// The ledger's record key survives any item id, and maps to the key the process remembers.
@Suite struct LedgerKeyTests {
    @Test func aKeyReadsBackAsWritten() {
        let key = LedgerKey(hub: "sb://ns.example/news", itemID: "item-1", platform: "apple", audience: "World")
        #expect(String(decoding: key.encoded, as: UTF8.self) == #"["sb://ns.example/news","item-1","apple","World"]"#)
        #expect(LedgerKey(decoding: key.encoded) == key)
        #expect(
            key.processKey == LedgerKey.processKey(itemID: "item-1", platform: "apple", audience: "World")
        )
    }

    @Test func anyStringsRoundTrip() async {
        // Every scalar below the surrogates: control characters, quotes and backslashes among them.
        await propertyCheck(input: Gen.character(in: "\u{0}"..."\u{D7FF}").string(of: 0...40).array(of: 4)) {
            fields in
            let key = LedgerKey(hub: fields[0], itemID: fields[1], platform: fields[2], audience: fields[3])
            #expect(LedgerKey(decoding: key.encoded) == key)
        }
    }

    @Test func recordsItDidNotWriteAreIgnored() {
        for text in ["", "hubcast", "{}", #"["a","b","c"]"#, #"["a","b","c",4]"#, #"["a","b","c","d","e"]"#] {
            #expect(LedgerKey(decoding: Array(text.utf8)) == nil, "\(text)")
        }
    }

    @Test func aNewsPartitionMapsToTheSameLedgerPartitionEverywhere() {
        let tp = TopicPartition(topic: "news.world", partition: 1)
        // FNV-1a: fixed across processes and releases, so these values are pinned.
        let spread = (0..<12).map {
            KafkaDeliveryLedger.ledgerPartition(of: TopicPartition(topic: "news.world", partition: Int32($0)), among: 6)
        }
        #expect(spread == [5, 4, 1, 0, 3, 2, 5, 4, 3, 2, 0, 1])
        #expect(KafkaDeliveryLedger.ledgerPartition(of: tp, among: 6) == 4)
        #expect(KafkaDeliveryLedger.ledgerPartition(of: tp, among: 1) == 0)
    }
}
