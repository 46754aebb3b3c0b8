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

    /// `value` with `decimals` digits after the point (as `%.Nf` prints it, without Foundation's
    /// formatter); `null` for NaN and infinities, which JSON cannot carry.
    public mutating func number(_ value: Double, decimals: Int) {
        let decimals = max(0, min(decimals, 9))
        let scale = (0..<decimals).reduce(1.0) { product, _ in product * 10 }
        let scaled = (abs(value) * scale).rounded()
        guard value.isFinite, scaled < 9e18 else { return null() }
        let units = Int64(scaled)
        let divisor = Int64(scale)
        var text = value < 0 && units != 0 ? "-" : ""
        text += String(units / divisor)
        if decimals > 0 {
            text += "." + String(zeroPadded: units % divisor, width: decimals)
        }
        raw(text.utf8)
    }

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

    /// Appends `value` as a JSON string literal, escaping only what RFC 8259 requires; runs of
    /// bytes that need no escape (all of most strings) are copied at once.
    public static func appendQuoted(_ value: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // A native string's bytes are read in place; a copy (`var`, for `withUTF8`) cost a retain
        // and a release, and a send writes about fifteen strings.
        if value.utf8.withContiguousStorageIfAvailable({ appendEscaped($0, to: &out) }) == nil {
            var value = value
            value.withUTF8 { appendEscaped($0, to: &out) }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        var start = 0
        for i in 0..<utf8.count {
            let b = utf8[i]
            guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i]))
            switch b {
            case 0x0A:
                out.append(UInt8(ascii: "\\"))
                out.append(UInt8(ascii: "n"))
            case 0x0D:
                out.append(UInt8(ascii: "\\"))
                out.append(UInt8(ascii: "r"))
            case 0x09:
                out.append(UInt8(ascii: "\\"))
                out.append(UInt8(ascii: "t"))
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out.append(UInt8(ascii: "\\"))
                out.append(b)
            default:
                out.append(contentsOf: [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(b >> 4)],
                    hex[Int(b & 0xF)],
                ])
            }
            start = i + 1
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
    }
}
