/// Percent-encoding as Python's `urllib.parse.quote(s, safe="")`: all but A–Z a–z 0–9 `_.-~`.
public enum PercentEncoding {
    private static let hex = Array("0123456789ABCDEF".utf8)

    public static func encode(_ s: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count * 3)
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "~"):
                out.append(b)
            default:
                out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ s: String) -> String? {
        var out: [UInt8] = []
        var bytes = s.utf8.makeIterator()
        while let b = bytes.next() {
            if b == UInt8(ascii: "%") {
                guard let h = bytes.next(), let l = bytes.next(), let hv = hexValue(h), let lv = hexValue(l) else {
                    return nil
                }
                out.append(hv << 4 | lv)
            } else {
                out.append(b)
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
