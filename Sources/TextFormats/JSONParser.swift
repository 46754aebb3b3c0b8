#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A strict RFC 8259 parser over raw bytes, so Kafka payloads are read where they lie.
public struct JSONParser {
    /// Where and why the bytes are not JSON.
    public struct SyntaxError: Error, Equatable, CustomStringConvertible {
        public let offset: Int
        public let reason: String
        public var description: String { "\(reason) at byte \(offset)" }
    }

    private let bytes: UnsafeRawBufferPointer
    private var index = 0
    private var depth = 0
    /// Arrays and objects recurse, so nesting is bounded: a news item is two levels deep, and a
    /// crafted 64 KB message of `[[[[…` must be refused, not overflow the stack (parsing it, or
    /// freeing the nested `JSONValue`s).
    private static let maxDepth = 64

    private init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Parses exactly one JSON value, with only white space around it.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(SyntaxError) -> JSONValue {
        var parser = JSONParser(bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected data after the JSON value") }
        return value
    }

    /// Parses exactly one JSON value as `parse` does, but hands an object's members to `member`
    /// in the order written instead of building its dictionary (a key written twice comes twice:
    /// keep the last, as `parse` does); returns nil then, and any other value as it is. A reader
    /// that wants a few known keys skips the hashing and the storage of a dictionary.
    public static func parseMembers(
        _ bytes: UnsafeRawBufferPointer,
        _ member: (String, JSONValue) -> Void
    ) throws(SyntaxError) -> JSONValue? {
        var parser = JSONParser(bytes)
        parser.skipWhitespace()
        var value: JSONValue?
        if parser.current == UInt8(ascii: "{") {
            try parser.parseMembers(member)
        } else {
            value = try parser.parseValue()
        }
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected data after the JSON value") }
        return value
    }

    public static func parse(_ bytes: [UInt8]) throws(SyntaxError) -> JSONValue {
        let result: Result<JSONValue, SyntaxError> = bytes.withUnsafeBytes { raw in
            do throws(SyntaxError) { return .success(try parse(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private func error(_ reason: String) -> SyntaxError { SyntaxError(offset: index, reason: reason) }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let b = current, b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { index += 1 }
    }

    private mutating func parseValue() throws(SyntaxError) -> JSONValue {
        guard let b = current else { throw error("unexpected end of input") }
        switch b {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected \(Self.describe(b))")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(SyntaxError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("invalid literal") }
        for i in 0..<count where bytes[index + i] != literal.utf8Start[i] { throw error("invalid literal") }
        index += count
    }

    /// A byte as an error message shows it: printable ASCII as itself, anything else (a control
    /// character, part of a multi-byte character) as hex, so the message never carries it raw.
    private static func describe(_ b: UInt8) -> String {
        (0x21...0x7E).contains(b)
            ? "character '\(Character(Unicode.Scalar(b)))'" : "byte 0x" + String(b, radix: 16, uppercase: true)
    }

    private mutating func nest() throws(SyntaxError) {
        depth += 1
        guard depth <= Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth) levels") }
    }

    private mutating func parseObject() throws(SyntaxError) -> JSONValue {
        var object: [String: JSONValue] = [:]
        try parseMembers { object[$0] = $1 }
        return .object(object)
    }

    /// The members of the object at `index`, in order, through its closing brace.
    private mutating func parseMembers(_ member: (String, JSONValue) -> Void) throws(SyntaxError) {
        try nest()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let key = try parseString()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':' after a key") }
            index += 1
            skipWhitespace()
            member(key, try parseValue())
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return
            default: throw error("expected ',' or '}' in an object")
            }
        }
    }

    private mutating func parseArray() throws(SyntaxError) -> JSONValue {
        try nest()
        defer { depth -= 1 }
        index += 1
        var array: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(array)
        }
        while true {
            skipWhitespace()
            array.append(try parseValue())
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(array)
            default: throw error("expected ',' or ']' in an array")
            }
        }
    }

    private mutating func parseNumber() throws(SyntaxError) -> Double {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
        } else {
            guard try digits() > 0 else { throw error("invalid number") }
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard try digits() > 0 else { throw error("invalid number: digits expected after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard try digits() > 0 else { throw error("invalid number: digits expected in the exponent") }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text) else { throw SyntaxError(offset: start, reason: "invalid number") }
        return value
    }

    private mutating func digits() throws(SyntaxError) -> Int {
        let start = index
        while let b = current, b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") { index += 1 }
        return index - start
    }

    private mutating func parseString() throws(SyntaxError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes, so the bytes are the string. A local index, not the property:
        // this loop is most of the bytes of every item.
        var end = index
        while end < bytes.count {
            let b = bytes[end]
            if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b < 0x20 { break }
            end += 1
        }
        index = end
        guard let stop = current else { throw error("unterminated string") }
        guard stop >= 0x20 else { throw error("control character in a string") }
        let run = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
        guard stop == UInt8(ascii: "\\") else {
            index += 1
            return try Self.validated(run.assumingMemoryBound(to: UInt8.self), at: start)
        }
        var utf8 = [UInt8](run)
        try parseEscapedTail(into: &utf8)
        index += 1
        let result: Result<String, SyntaxError> = utf8.withUnsafeBufferPointer { buffer in
            do throws(SyntaxError) { return .success(try Self.validated(buffer, at: start)) } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The string these bytes spell if they are UTF-8. Decoding replaces what is not UTF-8 with
    /// U+FFFD, so a string whose bytes differ from the input's was repaired: refused. Straight from
    /// the message's buffer, where `String(validating:)` wanted a copy in an array and looked up
    /// generic metadata for every string of every item.
    static func validated(_ utf8: UnsafeBufferPointer<UInt8>, at offset: Int) throws(SyntaxError) -> String {
        let string = String(decoding: utf8, as: UTF8.self)
        // memcmp, not `elementsEqual`: the generic comparison cost ~30 instructions a byte, 13% of
        // decoding a news item.
        let unchanged =
            string.utf8.withContiguousStorageIfAvailable { decoded in
                guard decoded.count == utf8.count else { return false }
                guard let a = decoded.baseAddress, let b = utf8.baseAddress else { return true }
                return memcmp(a, b, utf8.count) == 0
            } ?? string.utf8.elementsEqual(utf8)
        guard unchanged else { throw SyntaxError(offset: offset, reason: "string is not valid UTF-8") }
        return string
    }

    private mutating func parseEscapedTail(into utf8: inout [UInt8]) throws(SyntaxError) {
        while let b = current, b != UInt8(ascii: "\"") {
            guard b >= 0x20 else { throw error("control character in a string") }
            guard b == UInt8(ascii: "\\") else {
                utf8.append(b)
                index += 1
                continue
            }
            index += 1
            guard let e = current else { throw error("unterminated escape") }
            index += 1
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(e)
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u")
                    else {
                        throw error("unpaired surrogate in \\u escape")
                    }
                    index += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate in \\u escape") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw error("unpaired surrogate in \\u escape")
                }
                guard let s = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
                utf8.append(contentsOf: String(s).utf8)
            default:
                throw error("invalid escape: backslash then \(Self.describe(e))")
            }
        }
        guard current != nil else { throw error("unterminated string") }
    }

    private mutating func hex4() throws(SyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw error("invalid hex digit in \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
