/// NH's tag syntax: up to 120 of letters, digits and `_ @ # . : -`.
public enum TagSyntax {
    public static let maxLength = 120

    public static func isTag(_ s: String) -> Bool {
        let utf8 = s.utf8
        return !utf8.isEmpty && utf8.count <= maxLength && utf8.allSatisfy(isTagByte)
    }

    /// One byte of a tag: a letter, a digit or one of `_ @ # . : -`.
    @inline(__always)
    public static func isTagByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "#"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }
}
