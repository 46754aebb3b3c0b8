/// The XML the hub speaks: flat Atom registration entries and `<Error><Code/><Detail/></Error>`
/// bodies. Element text is decoded as an XML parser delivers character data: the five predefined
/// entities and character references, in one pass, CDATA sections as they are. Foundation's
/// XMLParser would do the same through libxml2, a library the static image would have to carry
/// for these few flat elements.
public enum XMLText {
    /// Text as XML character data or an attribute value. By scalar, not by `Character`: a quote
    /// followed by a combining mark is one Character that is not `"`, and would close the
    /// attribute. Scalars XML 1.0 cannot carry at all, even as references (controls other than tab
    /// and line ends, U+FFFE, U+FFFF), are left out.
    public static func escape(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in s.unicodeScalars {
            switch scalar {
            case "&": out.append(contentsOf: "&amp;".unicodeScalars)
            case "<": out.append(contentsOf: "&lt;".unicodeScalars)
            case ">": out.append(contentsOf: "&gt;".unicodeScalars)
            case "\"": out.append(contentsOf: "&quot;".unicodeScalars)
            case "'": out.append(contentsOf: "&apos;".unicodeScalars)
            default: if isXMLChar(scalar.value) { out.append(scalar) }
            }
        }
        return String(out)
    }

    /// XML 1.0's Char production (surrogates cannot be in a Swift string).
    public static func isXMLChar(_ value: UInt32) -> Bool {
        value == 0x9 || value == 0xA || value == 0xD || (0x20...0xFFFD).contains(value) || value >= 0x10000
    }

    /// Character data with its references decoded, in one pass (`&amp;lt;` is `&lt;`, not `<`). A
    /// reference that is not well formed, names an unknown entity or a code point XML does not
    /// allow, is kept as written: a message is shown as the hub sent it rather than guessed at.
    public static func unescape(_ s: String) -> String {
        guard s.contains("&") else { return s }
        var out = ""
        out.reserveCapacity(s.utf8.count)
        var rest = Substring(s)
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            let afterAmp = rest.index(after: amp)
            // The longest reference is `&#x10FFFF;`: look no further for its `;`.
            if let semicolon = rest[afterAmp...].prefix(9).firstIndex(of: ";"),
                let decoded = reference(rest[afterAmp..<semicolon])
            {
                out.append(decoded)
                rest = rest[rest.index(after: semicolon)...]
            } else {
                out.append("&")
                rest = rest[afterAmp...]
            }
        }
        return out + rest
    }

    /// The character `name` (between `&` and `;`) stands for, if it is one.
    static func reference(_ name: Substring) -> Character? {
        switch name {
        case "lt": return "<"
        case "gt": return ">"
        case "amp": return "&"
        case "quot": return "\""
        case "apos": return "'"
        default:
            guard name.first == "#" else { return nil }
            let digits = name.dropFirst()
            let value: UInt32? =
                digits.first == "x"
                ? (digits.count > 1 && digits.dropFirst().allSatisfy(\.isHexDigit)
                    ? UInt32(digits.dropFirst(), radix: 16) : nil)
                : (!digits.isEmpty && digits.allSatisfy(\.isASCII) && digits.allSatisfy(\.isNumber)
                    ? UInt32(digits) : nil)
            // XML's Char: tab, newline, carriage return, and everything from space up but surrogates and U+FFFE/U+FFFF.
            guard let value,
                value == 0x9 || value == 0xA || value == 0xD || (0x20...0xD7FF).contains(value)
                    || (0xE000...0xFFFD).contains(value) || (0x10000...0x10FFFF).contains(value),
                let scalar = Unicode.Scalar(value)
            else { return nil }
            return Character(scalar)
        }
    }

    /// The text of the first `<name>` element (CDATA sections unwrapped), or nil if there is none.
    public static func text(of name: String, in xml: String) -> String? {
        guard let open = xml.range(of: "<\(name)>"),
            let close = xml.range(of: "</\(name)>", range: open.upperBound..<xml.endIndex)
        else {
            return nil
        }
        var text = ""
        var rest = xml[open.upperBound..<close.lowerBound]
        while let start = rest.range(of: "<![CDATA[") {
            text += unescape(String(rest[..<start.lowerBound]))
            guard let end = rest.range(of: "]]>", range: start.upperBound..<rest.endIndex) else { return nil }
            text += rest[start.upperBound..<end.lowerBound]
            rest = rest[end.upperBound...]
        }
        return text + unescape(String(rest))
    }
}
