import News
import NotificationHubs
import TextFormats

/// A JSON template body compiled once at registration, rendered per send.
///
/// NH's template language: a JSON string value is an expression when it starts with `$`, `#`,
/// `.`, `%` or `{`; otherwise it is literal text. `$(p)` inserts property `p`, `$(p,n)` clips it to
/// n characters, `.(p,n)` clips and adds an ellipsis, `%(p)` URI-encodes it, `#(p)` emits a JSON
/// number when the value is one, `'text'` is a literal, and `{a + b}` concatenates.
public struct CompiledTemplate: Sendable {
    indirect enum Node: Sendable {
        case object([(String, Node)])
        case array([Node])
        case literal(String)
        case raw(String)
        case concat([Term])
        case number(String)
    }

    enum Term: Sendable, Equatable {
        case property(name: String, clip: Int?, ellipsis: Bool, uriEncode: Bool)
        case text(String)
    }

    /// Why a template body was refused.
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    let root: Node

    public init(body: String) throws(Invalid) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(Array(body.utf8))
        } catch {
            throw Invalid(description: "template body is not JSON: \(error)")
        }
        root = try Self.compile(value)
    }

    private static func compile(_ value: JSONValue) throws(Invalid) -> Node {
        switch value {
        case .object(let members):
            var nodes: [(String, Node)] = []
            for (key, member) in members.sorted(by: { $0.key < $1.key }) { nodes.append((key, try compile(member))) }
            return .object(nodes)
        case .array(let elements):
            var nodes: [Node] = []
            for element in elements { nodes.append(try compile(element)) }
            return .array(nodes)
        case .string(let s): return try compileString(s)
        case .number(let n): return .raw(n == n.rounded() && abs(n) < 1e15 ? String(Int64(n)) : String(n))
        case .bool(let b): return .raw(b ? "true" : "false")
        case .null: return .raw("null")
        }
    }

    private static func compileString(_ s: String) throws(Invalid) -> Node {
        guard let first = s.first, "$#.%{".contains(first) else { return .literal(s) }
        if first == "#" {
            guard s.hasPrefix("#("), s.hasSuffix(")") else { throw Invalid(description: "bad expression \(s)") }
            return .number(String(s.dropFirst(2).dropLast()).trimmingCharacters(in: " ").lowercased())
        }
        if first == "{" {
            guard s.hasSuffix("}") else { throw Invalid(description: "expression \(s) has no closing }") }
            var terms: [Term] = []
            for part in splitOnPlus(String(s.dropFirst().dropLast())) { terms.append(try term(part)) }
            return .concat(terms)
        }
        return .concat([try term(s)])
    }

    /// Splits `a + 'b + c' + d` on the `+` outside quotes.
    private static func splitOnPlus(_ s: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var quote: Character?
        for c in s {
            if let q = quote {
                if c == q { quote = nil }
                current.append(c)
            } else if c == "'" || c == "\"" {
                quote = c
                current.append(c)
            } else if c == "+" {
                parts.append(current)
                current = ""
            } else {
                current.append(c)
            }
        }
        parts.append(current)
        return parts.map { $0.trimmingCharacters(in: " ") }
    }

    private static func term(_ s: String) throws(Invalid) -> Term {
        if s.count >= 2, let q = s.first, q == "'" || q == "\"", s.last == q {
            return .text(String(s.dropFirst().dropLast()))
        }
        guard let marker = s.first, "$.%".contains(marker), s.dropFirst().first == "(", s.hasSuffix(")") else {
            throw Invalid(description: "bad expression \(s): expected $(prop), $(prop,n), .(prop,n), %(prop) or 'text'")
        }
        let inside = s.dropFirst(2).dropLast().split(separator: ",", omittingEmptySubsequences: false).map {
            String($0).trimmingCharacters(in: " ")
        }
        guard let name = inside.first, !name.isEmpty,
            name.utf8.allSatisfy({ TagSyntax.isTagByte($0) && !"@#.:-".utf8.contains($0) })
        else {
            throw Invalid(description: "bad property name in \(s)")
        }
        var clip: Int?
        if inside.count == 2 {
            guard let n = Int(inside[1]), n >= 0 else { throw Invalid(description: "bad length in \(s)") }
            clip = n
        } else if inside.count > 2 {
            throw Invalid(description: "too many arguments in \(s)")
        }
        if marker == "." && clip == nil { throw Invalid(description: ".(prop,n) needs a length in \(s)") }
        return .property(name: name.lowercased(), clip: clip, ellipsis: marker == ".", uriEncode: marker == "%")
    }
}

private extension String {
    func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
