import News
import Testing
import TextFormats

@Suite struct NewsItemDecoderTests {
    let decoder = NewsItemDecoder()

    private func error(
        _ json: String,
        topicCategory: String? = nil,
        decoder: NewsItemDecoder = NewsItemDecoder()
    ) -> NewsItemError? {
        do {
            _ = try decoder.decode(Array(json.utf8), topicCategory: topicCategory)
            return nil
        } catch {
            return error
        }
    }

    @Test func decodesEveryField() throws {
        let item = try decoder.decode(
            Array(
                """
                {"id":"a1","headline":"  Big news  ","category":"World","body":"b","url":"https://x/y","imageUrl":"https://x/i.png",
                 "locale":"zh-TW","tagExpression":"World && !Sports","properties":{"k":"v"},"secure":true,
                 "publishedAt":"2026-11-22T10:00:00Z","expiresAt":"2026-11-22T12:00:00+02:00"}
                """.utf8
            ),
            topicCategory: "World"
        )
        #expect(item.id == "a1")
        #expect(item.headline == "Big news")
        #expect(item.category == "World")
        #expect(item.tagExpression == "World && !Sports")
        #expect(item.properties == ["k": "v"])
        #expect(item.secure)
        #expect(item.publishedAt?.epochSeconds == 1_795_341_600)
        #expect(item.expiresAt?.epochSeconds == 1_795_341_600)
        #expect(item.isExpired(atEpochSeconds: 1_795_341_600))
        #expect(!item.isExpired(atEpochSeconds: 1_795_341_599))
    }

    @Test func malformedJSONSaysWhereItBroke() {
        let e = error(#"{"id":"a","headline":"x""#)
        #expect(e?.kind == .malformedJSON)
        #expect(e?.description.contains("not valid JSON") == true)
        #expect(e?.description.contains("expected ',' or '}' in an object at byte 24") == true)
    }

    @Test func missingHeadlineNamesTheField() {
        let e = error(#"{"id":"a"}"#)
        #expect(e?.kind == .schema)
        #expect(e?.field == "headline")
        #expect(e?.description == #"field "headline" is required"#)
    }

    @Test func oversizeMessageIsRejectedBeforeParsing() {
        let big = #"{"id":"a","headline":""# + String(repeating: "x", count: 200) + #""}"#
        let e = error(big, decoder: NewsItemDecoder(maxMessageBytes: 100))
        #expect(e?.kind == .oversize)
        #expect(e?.description == "message is \(big.utf8.count) bytes, over the 100-byte limit")
    }

    @Test func categoryMustMatchTheTopic() {
        let e = error(#"{"id":"a","headline":"x","category":"Sports"}"#, topicCategory: "World")
        #expect(e?.kind == .categoryMismatch)
        #expect(e?.description == #"field "category" is "Sports" but the item was published to the World topic"#)
        #expect(error(#"{"id":"a","headline":"x","category":"World"}"#, topicCategory: "World") == nil)
        #expect(error(#"{"id":"a","headline":"x"}"#, topicCategory: "World") == nil)
    }

    @Test func wrongTypesNameTheFieldAndType() {
        #expect(error(#"{"id":1,"headline":"x"}"#)?.description == #"field "id" must be a string, not number"#)
        #expect(error(#"{"id":"a","headline":"x","users":["ok",3]}"#)?.field == "users[1]")
        #expect(error(#"{"id":"a","headline":"x","properties":{"n":true}}"#)?.field == "properties.n")
        #expect(error("[]")?.description == "a news item must be a JSON object, not array")
    }

    @Test func jsonParserHandlesEscapesAndRejectsBadInput() throws {
        let item = try decoder.decode(Array(#"{"id":"\u00e9\ud83c\udf0d","headline":"a\"b\\c\/d\n"}"#.utf8))
        #expect(item.id == "é🌍")
        #expect(item.headline == "a\"b\\c/d")
        #expect(error(#"{"id":"\ud800","headline":"x"}"#)?.kind == .malformedJSON)
        #expect(error(#"{"id":"a","headline":"x"} extra"#)?.kind == .malformedJSON)
        #expect(error("{\"id\":\"a\u{1}\",\"headline\":\"x\"}")?.kind == .malformedJSON)
        #expect(error(String(repeating: "[", count: 100))?.description.contains("nesting") == true)
        #expect(error(#"{"id":"a","headline":"x","n":01}"#)?.kind == .malformedJSON)
        #expect(
            try JSONParser.parse(Array("[1.5e3,-0,true,null]".utf8))
                == .array([.number(1500), .number(0), .bool(true), .null])
        )
    }

    /// The decoder reads an item's members as they come instead of from a dictionary: a key
    /// written twice is still the last one's, and a member it does not know is still JSON.
    @Test func repeatedKeysKeepTheLastAndUnknownMembersAreStillChecked() throws {
        let last = try decoder.decode(Array(#"{"id":1,"headline":"first","id":"b","headline":"second"}"#.utf8))
        #expect(last.id == "b")
        #expect(last.headline == "second")
        #expect(error(#"{"id":"a","headline":"x","id":2}"#)?.description == #"field "id" must be a string, not number"#)
        let extra = try decoder.decode(Array(#"{"id":"a","extra":{"x":[1,{"y":null}]},"headline":"h"}"#.utf8))
        #expect(extra == NewsItem(id: "a", headline: "h"))
        let deep = String(repeating: "[", count: 70) + String(repeating: "]", count: 70)
        #expect(error(#"{"id":"a","headline":"x","extra":\#(deep)}"#)?.description.contains("nesting") == true)
        #expect(error(#"{"id":"a","headline":"x","extra":tru}"#)?.kind == .malformedJSON)
        #expect(error(#"["id","a"]"#)?.description == "a news item must be a JSON object, not array")
        #expect(error(#" "text" "#)?.description == "a news item must be a JSON object, not string")
        #expect(error(#"{"id":"a","headline":"x"}{}"#)?.kind == .malformedJSON)
        #expect(error(#"{"id":"a","headline":"x",}"#)?.kind == .malformedJSON)
        #expect(error(#"{"id":"a" "headline":"x"}"#)?.kind == .malformedJSON)
    }

    /// Lengths are in Unicode scalars (counted only when the bytes could exceed the limit); a
    /// headline is trimmed of Unicode white space, and one with none is kept as it is.
    @Test func lengthsCountScalarsAndHeadlinesAreTrimmed() throws {
        let e128 = String(repeating: "\u{E9}", count: 128)
        #expect(try decoder.decode(Array(#"{"id":"\#(e128)","headline":"x"}"#.utf8)).id == e128)
        #expect(
            error(#"{"id":"\#(e128)\#u{E9}","headline":"x"}"#)?.description
                == #"field "id" must be 1 to 128 characters, got 129"#
        )
        #expect(error(#"{"id":"","headline":"x"}"#)?.description == #"field "id" must be 1 to 128 characters, got 0"#)
        let globes = String(repeating: "\u{1F30D}", count: 512)
        #expect(try decoder.decode(Array(#"{"id":"a","headline":" \#(globes)\t"}"#.utf8)).headline == globes)
        #expect(
            error(#"{"id":"a","headline":"\#(globes)x"}"#)?.description
                == #"field "headline" is 513 characters after trimming, over 512"#
        )
        #expect(
            try decoder.decode(Array("{\"id\":\"a\",\"headline\":\"\u{A0}\u{2003}Quake\u{3000}\"}".utf8)).headline
                == "Quake"
        )
        #expect(try decoder.decode(Array(#"{"id":"a","headline":"\n Quake \r\n"}"#.utf8)).headline == "Quake")
        #expect(try decoder.decode(Array(#"{"id":"a","headline":"\u007fQuake"}"#.utf8)).headline == "\u{7F}Quake")
        #expect(error(#"{"id":"a","headline":" \t\u00a0 "}"#)?.description == #"field "headline" is empty"#)
    }

    /// `parseMembers` is `parse` without the dictionary: for any input, both refuse it, or the
    /// members it hands over (the last of each key) are the object `parse` builds, or both give
    /// the same non-object value.
    @Test func parseMembersAgreesWithParse() throws {
        var random = SystemRandomNumberGenerator()
        let seeds = [
            #"{"id":"a","headline":"x","users":["u1","u2"],"properties":{"k":"v"},"n":-1.5e3,"t":true,"z":null}"#,
            #"{"a":1,"a":2,"b":{"a":3},"c":[{}],"d":"\u00e9\n"}"#, #"[1,{"a":2}]"#, #""s""#, "{}", " { } ",
        ].map { Array($0.utf8) }
        let alphabet = Array(#"{}[]",:\ 0-1.eEtrufalsn"#.utf8) + [0xC3, 0xA9, 0xFF, 0x01]
        for _ in 0..<20_000 {
            var bytes = seeds[Int.random(in: 0..<seeds.count, using: &random)]
            for _ in 0..<Int.random(in: 0...3, using: &random) {
                let at = Int.random(in: 0...bytes.count, using: &random)
                let byte = alphabet[Int.random(in: 0..<alphabet.count, using: &random)]
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes.insert(byte, at: at)
                case 1 where at < bytes.count: bytes.remove(at: at)
                default: if at < bytes.count { bytes[at] = byte }
                }
            }
            let whole = Result { () throws(JSONParser.SyntaxError) in try JSONParser.parse(bytes) }
            var members: [String: JSONValue] = [:]
            let streamed = bytes.withUnsafeBytes { raw in
                Result { () throws(JSONParser.SyntaxError) in try JSONParser.parseMembers(raw) { members[$0] = $1 } }
            }
            switch (whole, streamed) {
            case (.success(.object(let object)), .success(nil)):
                #expect(object == members, "\(String(decoding: bytes, as: UTF8.self))")
            case (.success(let value), .success(let other?)):
                #expect(value == other, "\(String(decoding: bytes, as: UTF8.self))")
            case (.failure(let a), .failure(let b)):
                #expect(a == b, "\(String(decoding: bytes, as: UTF8.self))")
            default:
                Issue.record("parse \(whole) but parseMembers \(streamed): \(String(decoding: bytes, as: UTF8.self))")
            }
        }
    }

    @Test func invalidUTF8IsMalformed() {
        let bytes: [UInt8] = Array(#"{"id":"a","headline":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8)
        #expect(throws: NewsItemError.self) { try decoder.decode(bytes) }
    }

    /// Strings are decoded with repair and refused if the repair changed a byte: these are the
    /// sequences where a count of bytes would not show it (a truncated four-byte sequence becomes
    /// one three-byte U+FFFD), an encoded surrogate, an overlong form and a lone continuation, with
    /// and without an escape earlier in the string; and U+FFFD itself, which is valid.
    @Test(arguments: [[0xF0, 0x9F, 0x98], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0x80], [0xE2, 0x82]] as [[UInt8]])
    func repairedSequencesAreRefused(_ invalid: [UInt8]) throws {
        for prefix in ["x", #"\n"#] {
            // Followed by more text, and last before the closing quote.
            for suffix in ["z", ""] {
                let bytes = Array(#"{"id":"a","headline":"\#(prefix)"#.utf8) + invalid + Array(#"\#(suffix)"}"#.utf8)
                #expect(throws: NewsItemError.self) { try decoder.decode(bytes) }
                #expect(throws: JSONParser.SyntaxError.self) {
                    try JSONParser.parse(Array(#"["\#(prefix)"#.utf8) + invalid + Array(#"\#(suffix)"]"#.utf8))
                }
            }
        }
        let valid = Array(#"{"id":"a","headline":"\#u{FFFD} caf\#u{E9} \#u{1F30D}"}"#.utf8)
        #expect(try decoder.decode(valid).headline == "\u{FFFD} caf\u{E9} \u{1F30D}")
    }

    @Test func platformsAndPayloadsAreReadAndBadOnesNameTheirField() throws {
        let item = try decoder.decode(
            Array(
                #"{"id":"p","headline":"h","platforms":["windows","template"],"notifications":{"apple":{"aps":{"badge":1}},"windows":"<toast/>"}}"#
                    .utf8
            )
        )
        #expect(item.platforms == [.windows, .template])
        #expect(item.sendPlatforms == [.windows, .template, .apple])
        #expect(item.notifications[.windows] == .xml("<toast/>"))
        // Written back and read again, the item is the same.
        #expect(try decoder.decode(item.json) == item)
        let cases: [(String, String, String)] = [
            (#""platforms":["apple","blackberry"]"#, "platforms[1]", "must be one of template, apple, fcmv1, windows"),
            (#""platforms":["gcm"]"#, "platforms[0]", "retired by Google in June 2024: use fcmv1"),
            (#""platforms":["apple","apple"]"#, "platforms[1]", "names apple a second time"),
            (#""platforms":[]"#, "platforms", "must list 1 to 4 platforms"),
            (#""platforms":"apple""#, "platforms", "must be an array of platform names, not string"),
            (#""platforms":[7]"#, "platforms[0]", "must be a string, not number"),
            (#""notifications":{"apple":"{}"}"#, "notifications.apple", "must be a JSON object"),
            (#""notifications":{"windows":{"toast":1}}"#, "notifications.windows", "must be the XML"),
            (#""notifications":{"template":{}}"#, "notifications.template", "is not a payload"),
            (#""notifications":{"baidu":{}}"#, "notifications.baidu", "must be one of apple, fcmv1, windows"),
            (#""notifications":[]"#, "notifications", "must be an object of payloads"),
            (#""secure":true,"notifications":{"apple":{"aps":{}}}"#, "notifications", "secure item"),
            (
                #""sendAt":"2026-11-27T10:00:00Z","expiresAt":"2026-11-27T10:00:00Z""#, "sendAt",
                "is not before expiresAt"
            ),
            (#""sendAt":"tomorrow""#, "sendAt", "must be an RFC 3339 date-time"),
        ]
        for (members, field, reason) in cases {
            let error = error(#"{"id":"x","headline":"h","# + members + "}")
            #expect(error?.field == field, "\(members): \(String(describing: error))")
            #expect(error?.reason.contains(reason) == true, "\(members): \(String(describing: error))")
        }
    }
}

@Suite struct CategoriesTests {
    @Test func defaultTopicsFollowThePrefixAndLowercase() throws {
        let c = try Categories()
        #expect(
            c.topics == [
                "news.world", "news.politics", "news.business", "news.technology", "news.science", "news.sports",
            ]
        )
        #expect(c.category(forTopic: "news.world") == "World")
        #expect(c.topic(for: "Sports") == "news.sports")
        #expect(c.category(forTopic: "news.weather") == nil)
    }

    @Test func overridesAndBadNames() throws {
        let c = try Categories(names: ["World", "Local"], prefix: "prod.", overrides: ["Local": "city-desk"])
        #expect(c.topics == ["prod.world", "city-desk"])
        #expect(c.category(forTopic: "city-desk") == "Local")
        #expect(throws: NewsItemError.self) { try Categories(names: ["World News"]) }
        #expect(throws: NewsItemError.self) { try Categories(names: ["A", "B"], overrides: ["A": "t", "B": "t"]) }
        #expect(throws: NewsItemError.self) { try Categories(names: ["A"], overrides: ["C": "t"]) }
    }

    @Test func timestampsFollowRFC3339() {
        #expect(Timestamp(rfc3339: "1970-01-01T00:00:00Z")?.epochSeconds == 0)
        #expect(Timestamp(rfc3339: "1970-01-01T01:00:00+01:00")?.epochSeconds == 0)
        #expect(Timestamp(rfc3339: "2000-02-29T12:00:00.5Z")?.epochSeconds == 951_825_600.5)
        #expect(Timestamp(rfc3339: "2026-11-22T18:30:00") == nil)
        #expect(Timestamp(rfc3339: "2026-11-22 18:30:00Z") == nil)
        #expect(Timestamp(rfc3339: "2026-11-22T24:00:00Z") == nil)
    }
}
