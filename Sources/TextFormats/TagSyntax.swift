/// NH's tag syntax: up to 120 of letters, digits and `_ @ # . : -`.
public enum TagSyntax {
    public static let maxLength = 120

    public static func isTag(_ s: String) -> Bool {
        let utf8 = s.utf8
        return !utf8.isEmpty && utf8.count <= maxLength && utf8.allSatisfy(isTagByte)
    }

    /// The system tags the hub gives every installation: `$InstallationId:{id}`, and
    /// `$UserId:{id}` for one with a `userId`. Every other tag starting with `$` is reserved.
    public static let systemTagPrefixes = ["$InstallationId:{", "$UserId:{"]
    /// What may stand between the braces: the installation API's rule for user ids, letters, digits
    /// and `- _ @ # . : =`, up to this many characters.
    public static let maxSystemTagValueLength = 256

    /// The length of the system tag at the start of `bytes`, nil if it does not start with one.
    public static func systemTagLength(_ bytes: some Collection<UInt8>) -> Int? {
        for prefix in systemTagPrefixes where bytes.starts(with: prefix.utf8) {
            let value = bytes.dropFirst(prefix.utf8.count).prefix { isSystemTagValueByte($0) }
            guard (1...maxSystemTagValueLength).contains(value.count),
                bytes.dropFirst(prefix.utf8.count + value.count).first == UInt8(ascii: "}")
            else { return nil }
            return prefix.utf8.count + value.count + 1
        }
        return nil
    }

    public static func isSystemTag(_ s: String) -> Bool { systemTagLength(s.utf8) == s.utf8.count }

    /// The system tag of an installation or a user id, if the id can be one.
    public static func systemTag(_ prefix: String, _ id: String) -> String? {
        let tag = prefix + id + "}"
        return isSystemTag(tag) ? tag : nil
    }

    private static func isSystemTagValueByte(_ b: UInt8) -> Bool { isTagByte(b) || b == UInt8(ascii: "=") }

    /// One byte of a tag: a letter, a digit or one of `_ @ # . : -`.
    @inline(__always)
    public static func isTagByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "#"), UInt8(ascii: "."), UInt8(ascii: ":"),
            UInt8(ascii: "-"):
            true
        default:
            false
        }
    }
}
