import TestSupport

/// Tag-expression text for the fuzz test: valid grammar, token soup, deep nesting, long tags and
/// OR lists, odd Unicode and control characters, and the degenerate cases.
enum ExpressionFuzzer {
    static let tagBytes = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@#.:-".utf8)
    static let spaces = ["", " ", "  ", "\t"]
    static let tokens = [
        "(", ")", "!", "&&", "||", "&", "|", " ", "\t", "!!", "()", "&&&", "|||", ")(", "!(", "a", "World",
        "username:x",
    ]
    /// Controls, separators, bidi and zero-width characters, non-ASCII letters, emoji, full-width operators.
    static let oddScalars: [Unicode.Scalar] = [
        "\u{0}", "\u{1B}", "\n", "\r", "\u{7F}", "\u{85}", "\u{9B}", "\u{200B}", "\u{200D}", "\u{202E}", "\u{2028}",
        "\u{FEFF}", "\u{FFFD}", "\u{FFFF}", "\u{E000}", "\u{10FFFF}", "\u{301}", "é", "ß", "ニ", "😀", "！", "（", "）", "＆",
        "｜",
    ]

    static func make(_ rng: inout SeededGenerator) -> String {
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<30: valid(depth: Int.random(in: 0...8, using: &rng), &rng)
        case 30..<45: soup(&rng)
        case 45..<55: deepParentheses(&rng)
        case 55..<62: negations(&rng)
        case 62..<70: unbalanced(&rng)
        case 70..<77: longTag(&rng)
        case 77..<84: orList(count: rng.logUniform(upTo: 2_000), &rng)
        case 84..<94: oddCharacters(&rng)
        default: degenerate(&rng)
        }
    }

    static func tag(_ rng: inout SeededGenerator, length: Int? = nil) -> String {
        let count = length ?? Int.random(in: 1...20, using: &rng)
        return String(
            decoding: (0..<count).map { _ in tagBytes.randomElement(using: &rng) ?? UInt8(ascii: "a") },
            as: UTF8.self
        )
    }

    static func space(_ rng: inout SeededGenerator) -> String { spaces.randomElement(using: &rng) ?? "" }

    /// Always within the grammar and at most `depth` levels of `(` and `!`.
    static func valid(depth: Int, _ rng: inout SeededGenerator) -> String {
        if depth == 0 || Int.random(in: 0..<3, using: &rng) == 0 { return tag(&rng) }
        let s = space(&rng)
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return "!" + s + valid(depth: depth - 1, &rng)
        case 1: return "(" + s + valid(depth: depth - 1, &rng) + space(&rng) + ")"
        default:
            let op = Bool.random(using: &rng) ? "&&" : "||"
            let count = Int.random(in: 2...5, using: &rng)
            return (0..<count).map { _ in valid(depth: depth - 1, &rng) }.joined(separator: s + op + space(&rng))
        }
    }

    static func soup(_ rng: inout SeededGenerator) -> String {
        (0..<Int.random(in: 0...60, using: &rng)).map { _ in
            Int.random(in: 0..<4, using: &rng) == 0 ? tag(&rng) : tokens.randomElement(using: &rng) ?? ""
        }.joined()
    }

    static func deepParentheses(_ rng: inout SeededGenerator) -> String {
        let n = rng.logUniform(upTo: 40_000)
        let open = String(repeating: "(", count: n), close = String(repeating: ")", count: n)
        switch Int.random(in: 0..<5, using: &rng) {
        case 0: return open + tag(&rng) + close
        case 1: return open + tag(&rng)
        case 2: return tag(&rng) + close
        case 3: return open + close
        default: return String(repeating: "(!", count: n) + tag(&rng) + close
        }
    }

    static func negations(_ rng: inout SeededGenerator) -> String {
        let n = rng.logUniform(upTo: 50_000)
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return String(repeating: "!", count: n) + tag(&rng)
        case 1: return String(repeating: "!", count: n)
        case 2: return String(repeating: "! ", count: n) + tag(&rng)
        default: return tag(&rng) + " && " + String(repeating: "!", count: n) + tag(&rng)
        }
    }

    /// A valid expression with one parenthesis added or taken away somewhere.
    static func unbalanced(_ rng: inout SeededGenerator) -> String {
        var scalars = Array(valid(depth: 6, &rng).unicodeScalars)
        let at = Int.random(in: 0...scalars.count, using: &rng)
        if let paren = scalars.firstIndex(where: { $0 == "(" || $0 == ")" }), Bool.random(using: &rng) {
            scalars.remove(at: paren)
        } else {
            scalars.insert(Bool.random(using: &rng) ? "(" : ")", at: at)
        }
        var text = ""
        text.unicodeScalars.append(contentsOf: scalars)
        return text
    }

    static func longTag(_ rng: inout SeededGenerator) -> String {
        let lengths = [119, 120, 121, 1_000, 1 + rng.logUniform(upTo: 70_000)]
        let long = tag(&rng, length: lengths.randomElement(using: &rng) ?? 121)
        return Bool.random(using: &rng) ? long : tag(&rng) + " && !" + long
    }

    static func orList(count: Int, _ rng: inout SeededGenerator) -> String {
        let separator = Bool.random(using: &rng) ? " || " : "||"
        return (0...count).map { _ in tag(&rng) }.joined(separator: separator)
    }

    /// A valid expression with odd characters put in, or tags made of them.
    static func oddCharacters(_ rng: inout SeededGenerator) -> String {
        var scalars = Array(valid(depth: 4, &rng).unicodeScalars)
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let odd = oddScalars.randomElement(using: &rng) ?? "\u{0}"
            scalars.insert(odd, at: Int.random(in: 0...scalars.count, using: &rng))
        }
        var text = ""
        text.unicodeScalars.append(contentsOf: scalars)
        return text
    }

    static func degenerate(_ rng: inout SeededGenerator) -> String {
        [
            "", " ", "\t\t", "&&", "||", "!", "()", "(", ")", "&& ||", "a ||", "|| a", "!&&", "a b", "(a)(b)",
            "a && && b",
            "\u{0}", "\n", "a\u{0}", "!()", "((()))", "a || (b &&)", "a ! b",
        ].randomElement(using: &rng) ?? ""
    }
}
