import News
import TestSupport
import TextFormats

/// Kafka message values for the planner fuzz test, each with what the generator meant it to be.
enum NewsItemFuzzer {
    enum Intent: Equatable { case valid, anything }

    static let tagBytes = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@#.:-".utf8)
    static let nameBytes = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_".utf8)
    /// Letters from several scripts, emoji, combining and bidi marks, controls: all legal in a JSON string.
    static let textScalars: [Unicode.Scalar] = [
        "a", "Z", "7", "é", "ß", "ニ", "ュ", "😀", "👩", "\u{200D}", "\u{301}", "\u{202E}", "\u{FEFF}", "\u{0}", "\u{1B}",
        "\u{7F}",
        "\u{85}", "\u{2028}", "\u{FFFD}", "\u{10FFFF}", "\"", "\\", "/", "{", "[", "!", "(",
    ]

    static func make(_ rng: inout SeededGenerator) -> (bytes: [UInt8], intent: Intent) {
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<40: (validItem(&rng).json, .valid)
        case 40..<50: (schemaMutation(&rng), .anything)
        case 50..<60: (damaged(validItem(&rng).json, &rng), .anything)
        case 60..<68: (deepJSON(&rng), .anything)
        case 68..<70: (hugeString(&rng), .anything)
        case 70..<76: (withHostileExpression(&rng).json, .anything)
        case 76..<80: (withHostilePayloads(&rng).json, .anything)
        case 80..<90: (oddStrings(&rng), .anything)
        default: ((0..<rng.logUniform(upTo: 4_000)).map { _ in UInt8.random(in: 0...255, using: &rng) }, .anything)
        }
    }

    /// Random runs drawn once; strings are slices of them, since a fresh draw per character made
    /// generating the items cost more than decoding and planning them.
    static let tagPool = pool(of: tagBytes, seed: 1)
    static let namePool = pool(of: nameBytes, seed: 2)
    static let textPool: [Unicode.Scalar] = {
        var rng = SeededGenerator(seed: 3)
        return (0..<8_192).map { _ in textScalars.randomElement(using: &rng) ?? "a" }
    }()

    static func pool(of alphabet: [UInt8], seed: UInt64) -> [UInt8] {
        var rng = SeededGenerator(seed: seed)
        return (0..<8_192).map { _ in alphabet.randomElement(using: &rng) ?? UInt8(ascii: "a") }
    }

    static func tag(_ rng: inout SeededGenerator, maxLength: Int = 20) -> String {
        slice(of: tagPool, count: Int.random(in: 1...maxLength, using: &rng), &rng)
    }

    static func slice(of pool: [UInt8], count: Int, _ rng: inout SeededGenerator) -> String {
        let start = Int.random(in: 0...(pool.count - count), using: &rng)
        return String(decoding: pool[start..<start + count], as: UTF8.self)
    }

    /// Text that neither starts nor ends with white space, so trimming keeps its length.
    static func text(_ rng: inout SeededGenerator, maxLength: Int) -> String {
        let count = Int.random(in: 1...maxLength, using: &rng)
        let start = Int.random(in: 0...(textPool.count - count), using: &rng)
        var s = "x"
        s.unicodeScalars.append(contentsOf: textPool[start..<start + count])
        return s + "x"
    }

    /// Within every rule of the schema, with an audience `SendPlanner` accepts.
    static func validItem(_ rng: inout SeededGenerator) -> NewsItem {
        var item = NewsItem(id: text(&rng, maxLength: 60), headline: text(&rng, maxLength: 200))
        if Bool.random(using: &rng) {
            item.category = Bool.random(using: &rng) ? Categories.seedNames.randomElement(using: &rng) : tag(&rng)
        }
        if Bool.random(using: &rng) { item.body = text(&rng, maxLength: 400) }
        if Bool.random(using: &rng) { item.url = "https://news.example/" + tag(&rng) }
        item.secure = Int.random(in: 0..<10, using: &rng) == 0
        for _ in 0..<Int.random(in: 0...4, using: &rng) {
            item.properties[slice(of: namePool, count: Int.random(in: 1...120, using: &rng), &rng)] = text(
                &rng,
                maxLength: 40
            )
        }
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: item.tagExpression = validExpression(&rng)
        case 1:
            // Now and then the schema's maximum, 1,000 users (50 sends); mostly a few.
            let count = Int.random(in: 0..<50, using: &rng) == 0 ? 1_000 : 1 + rng.logUniform(upTo: 99)
            item.users = (0..<count).map { _ in tag(&rng, maxLength: 40) }
        default: break
        }
        if Int.random(in: 0..<4, using: &rng) == 0 {
            let platforms = NewsItem.Platform.allCases.filter { _ in Bool.random(using: &rng) }
            item.platforms = platforms.isEmpty ? [.apple] : platforms.shuffled(using: &rng)
        }
        return item
    }

    /// A decodable item with explicit payloads built to break the lint: XML-ish text, JSON of any
    /// shape nested up to the parser's limit, the legacy FCM members.
    static func withHostilePayloads(_ rng: inout SeededGenerator) -> NewsItem {
        var item = validItem(&rng)
        item.secure = false
        let markup = [
            "<", ">", "/", "=", "\"", "'", "&", "#", ";", "x", "toast", "tile", "!--", "?", "[CDATA[", "]]", " ", "é",
        ]
        let n = rng.logUniform(upTo: 6_000)
        item.notifications[.windows] = .xml("x" + (0..<n).map { _ in markup.randomElement(using: &rng) ?? "" }.joined())
        var value = JSONValue.string(text(&rng, maxLength: 20))
        for _ in 0..<Int.random(in: 0...63, using: &rng) {
            let key =
                ["aps", "alert", "message", "data", "notification", "android", "ttl", "content-available"]
                .randomElement(using: &rng) ?? "aps"
            value = Bool.random(using: &rng) ? .object([key: value]) : .array([value, .number(1)])
        }
        if case .object = value {} else { value = .object(["aps": value]) }
        item.notifications[Bool.random(using: &rng) ? .apple : .fcmv1] = .json(value)
        return item
    }

    /// An OR list of any length (split into chunks of 20), or up to 6 tags with `&&`, `||`, `!`, `(`.
    static func validExpression(_ rng: inout SeededGenerator) -> String {
        if Bool.random(using: &rng) {
            return (0..<1 + rng.logUniform(upTo: 300)).map { _ in tag(&rng) }.joined(separator: " || ")
        }
        var expression = tag(&rng)
        for _ in 0..<Int.random(in: 0...5, using: &rng) {
            if Bool.random(using: &rng) { expression = "(" + expression + ")" }
            expression += (Bool.random(using: &rng) ? " && " : "||") + (Bool.random(using: &rng) ? "!" : "") + tag(&rng)
        }
        return Bool.random(using: &rng) ? "!(" + expression + ")" : expression
    }

    /// A valid item with one field given the wrong type, or a required one taken away.
    static func schemaMutation(_ rng: inout SeededGenerator) -> [UInt8] {
        let item = validItem(&rng)
        var text = String(decoding: item.json, as: UTF8.self)
        let swaps = [
            ("\"headline\":", "\"headline\":42,\"x\":"), ("\"id\":", "\"id\":null,\"y\":"), ("{", "{\"users\":[],"),
            ("{", "{\"users\":\"alice\","), ("{", "{\"tagExpression\":\"\","), ("{", "{\"secure\":\"yes\","),
            ("{", "{\"properties\":{\"bad name\":\"v\"},"), ("{", "{\"expiresAt\":\"2026-13-01T00:00:00Z\","),
            ("\"id\"", "\"iD\""), ("{", "["),
        ]
        let (from, to) = swaps.randomElement(using: &rng) ?? ("{", "[")
        if let range = text.range(of: from) { text.replaceSubrange(range, with: to) }
        return Array(text.utf8)
    }

    /// Cut short, a byte overwritten, or a byte left out.
    static func damaged(_ json: [UInt8], _ rng: inout SeededGenerator) -> [UInt8] {
        var bytes = json
        let at = Int.random(in: 0..<bytes.count, using: &rng)
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: bytes.removeSubrange(at...)
        case 1: bytes[at] = UInt8.random(in: 0...255, using: &rng)
        default: bytes.remove(at: at)
        }
        return bytes
    }

    /// Arrays and objects nested far past any real item, alone or inside one.
    static func deepJSON(_ rng: inout SeededGenerator) -> [UInt8] {
        let n = rng.logUniform(upTo: 30_000)
        let arrays = String(repeating: "[", count: n) + String(repeating: "]", count: n)
        let objects = String(repeating: "{\"a\":", count: n / 5) + "1" + String(repeating: "}", count: n / 5)
        let text =
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: arrays
            case 1: objects
            case 2: #"{"id":"d","headline":"h","properties":"# + objects + "}"
            default: #"{"id":"d","headline":"h","users":"# + arrays + "}"
            }
        return Array(text.utf8)
    }

    /// One field of up to 64 KB (some over the message limit).
    static func hugeString(_ rng: inout SeededGenerator) -> [UInt8] {
        var item = validItem(&rng)
        let huge = String(repeating: Bool.random(using: &rng) ? "é" : "a", count: rng.logUniform(upTo: 33_000))
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: item.headline = huge
        case 1: item.body = huge
        case 2: item.id = huge
        default:
            item.users = nil
            item.tagExpression = huge
        }
        return item.json
    }

    /// A decodable item whose `tagExpression` is built to break a parser.
    static func withHostileExpression(_ rng: inout SeededGenerator) -> NewsItem {
        var item = validItem(&rng)
        item.users = nil
        let n = rng.logUniform(upTo: 32_000)
        let tokens = ["(", ")", "!", "&&", "||", " ", "a", "é", "\u{1B}", "\u{0}", "||||", "(!"]
        item.tagExpression =
            switch Int.random(in: 0..<5, using: &rng) {
            case 0: String(repeating: "(", count: n) + "World" + String(repeating: ")", count: n)
            case 1: String(repeating: "!", count: n) + "World"
            case 2:
                (0..<1 + n / 10).map { _ in tag(&rng, maxLength: 4) }.joined(
                    separator: Bool.random(using: &rng) ? "||" : "&&"
                )
            case 3: (0..<1 + n % 200).map { _ in tokens.randomElement(using: &rng) ?? "" }.joined()
            default: tag(&rng, maxLength: 200)
            }
        return item
    }

    /// Strings JSON forbids or that only escapes allow: raw controls, bad UTF-8, lone surrogates, a BOM.
    static func oddStrings(_ rng: inout SeededGenerator) -> [UInt8] {
        let pieces: [[UInt8]] = [
            [0x00], [0x1B], [0x0A], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xFF], [0xF4, 0x90, 0x80, 0x80],
            [0xE2, 0x80, 0xAE],
            Array(#"\ud800"#.utf8), Array(#"\udc00\ud800"#.utf8), Array(#"\u0000"#.utf8), Array(#"\uD83D\uDE00"#.utf8),
            Array(#"\x"#.utf8), Array(#"\u12"#.utf8), Array("é😀".utf8),
        ]
        var headline: [UInt8] = Array("h".utf8)
        for _ in 0..<Int.random(in: 1...4, using: &rng) { headline += pieces.randomElement(using: &rng) ?? [] }
        let bom: [UInt8] = Int.random(in: 0..<8, using: &rng) == 0 ? [0xEF, 0xBB, 0xBF] : []
        return bom + Array(#"{"id":"o","headline":""#.utf8) + headline + Array(#"","category":"World"}"#.utf8)
    }
}
