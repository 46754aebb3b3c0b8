/// Text that came from outside (a setting, a tag, a header), made safe to echo in an error message.
///
/// Printable Unicode stays as it is, so "Café" or "ニュース" read as typed; control characters,
/// line and paragraph separators and invisible format characters (bidi overrides, zero-width
/// characters) are written as Swift escapes, so "\u{1B}[31m" or a newline never reach a
/// terminal or a log line raw.
public enum LegibleText {
    /// `text` in double quotes, with `"` and `\` escaped too, so the quoted span is unambiguous.
    public static func quoted(_ text: some StringProtocol) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default: append(scalar, to: &out)
            }
        }
        return out + "\""
    }

    /// `text` with only the illegible characters escaped: for whole messages that quote their own values.
    public static func sanitized(_ text: some StringProtocol) -> String {
        var out = ""
        for scalar in text.unicodeScalars { append(scalar, to: &out) }
        return out
    }

    /// One character as an error message shows it: `'é'`, or `U+001B` when it would not print.
    public static func character(_ scalar: Unicode.Scalar) -> String {
        isLegible(scalar) ? "'\(scalar)'" : "U+" + hex(scalar)
    }

    /// False for what a terminal would act on or not show: controls, separators, format characters,
    /// private-use, unassigned and surrogate code points.
    public static func isLegible(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .surrogate, .unassigned: false
        default: true
        }
    }

    private static func append(_ scalar: Unicode.Scalar, to out: inout String) {
        switch scalar {
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if isLegible(scalar) {
                out.unicodeScalars.append(scalar)
            } else {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
    }

    /// At least four hex digits, as code points are usually written.
    private static func hex(_ scalar: Unicode.Scalar) -> String {
        String(zeroPadded: scalar.value, width: 4, radix: 16, uppercase: true)
    }
}
