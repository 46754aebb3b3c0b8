import News
import NotificationHubs
import TextFormats

extension CompiledTemplate {
    /// Renders with the send's properties (names matched case-insensitively; absent ones are empty).
    public func render(_ properties: [String: String]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        Self.render(root, properties, into: &out)
        return out
    }

    /// Property names lowercased once per send, not once per device.
    public static func normalize(_ properties: [String: String]) -> [String: String] {
        Dictionary(properties.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
    }

    private static func render(_ node: Node, _ p: [String: String], into out: inout [UInt8]) {
        switch node {
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONWriter.appendQuoted(key, to: &out)
                out.append(UInt8(ascii: ":"))
                render(value, p, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                render(element, p, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .literal(let s):
            JSONWriter.appendQuoted(s, to: &out)
        case .raw(let s):
            out.append(contentsOf: s.utf8)
        case .number(let name):
            let value = p[name] ?? ""
            if isJSONNumber(value) {
                out.append(contentsOf: value.utf8)
            } else {
                JSONWriter.appendQuoted(value, to: &out)
            }
        case .concat(let terms):
            var text = ""
            for term in terms { text += evaluate(term, p) }
            JSONWriter.appendQuoted(text, to: &out)
        }
    }

    private static func evaluate(_ term: Term, _ p: [String: String]) -> String {
        switch term {
        case .text(let s):
            return s
        case .property(let name, let clip, let ellipsis, let uriEncode):
            var value = p[name] ?? ""
            if let clip, value.count > clip {
                value = String(value.prefix(clip)) + (ellipsis ? "…" : "")
            }
            return uriEncode ? PercentEncoding.encode(value) : value
        }
    }

    private static func isJSONNumber(_ s: String) -> Bool {
        guard !s.isEmpty, let parsed = try? JSONParser.parse(Array(s.utf8)), case .number = parsed else { return false }
        return true
    }

}
