/// Writes JSON text by hand: hubcast's request bodies and records need no general-purpose encoder.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    private var needsComma = false

    public init(reservingCapacity capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes `"name":` inside an object; the value call that follows completes the member.
    public mutating func key(_ name: String) {
        separate()
        Self.appendQuoted(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    public mutating func string(_ value: String) {
        separate()
        Self.appendQuoted(value, to: &bytes)
        needsComma = true
    }

    public mutating func raw(_ json: some Sequence<UInt8>) {
        separate()
        bytes.append(contentsOf: json)
        needsComma = true
    }

    public mutating func number(_ value: Int64) { raw(String(value).utf8) }

    public mutating func bool(_ value: Bool) { raw((value ? "true" : "false").utf8) }

    public mutating func null() { raw("null".utf8) }

    /// `"name":"value"`, skipped when value is nil.
    public mutating func member(_ name: String, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends `value` as a JSON string literal, escaping only what RFC 8259 requires.
    public static func appendQuoted(_ value: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in value.utf8 {
            switch b {
            case UInt8(ascii: "\""): out.append(UInt8(ascii: "\\")); out.append(b)
            case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(b)
            case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
            case 0..<0x20:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(b >> 4)], hex[Int(b & 0xF)]])
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
