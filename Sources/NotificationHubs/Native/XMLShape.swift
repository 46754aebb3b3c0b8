/// Checks that bytes are one well-formed XML document and names its root element: what a WNS
/// toast, tile or badge must be before it is sent. Elements, attributes (quoted, not repeated),
/// references, comments, CDATA and processing instructions, and no control character XML cannot
/// carry; a DOCTYPE is refused (WNS takes none). Names are checked as XML 1.0's ASCII letters, digits and `_:.-`, and any non-ASCII
/// byte. Nesting is tracked on a stack of its own, not by recursion: input decides the depth.
/// (Foundation's XMLParser would bring libxml2 into the static image for this one check.)
public struct XMLShape {
    public struct Malformed: Error, Equatable, CustomStringConvertible {
        public let offset: Int
        public let reason: String
        public var description: String { "\(reason) at byte \(offset)" }
    }

    private let bytes: [UInt8]
    private var i = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The root element's name.
    public static func rootElement(of bytes: [UInt8]) throws(Malformed) -> String {
        var shape = XMLShape(bytes)
        return try shape.document()
    }

    private mutating func document() throws(Malformed) -> String {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
        try miscellany()
        guard peek(0) == UInt8(ascii: "<") else {
            throw fail(i == bytes.count ? "no root element" : "text before the root element")
        }
        var open: [ArraySlice<UInt8>] = []
        var root: String?
        while true {
            if open.isEmpty, root != nil {
                try miscellany()
                guard i == bytes.count else { throw fail("content after the root element") }
                return root ?? ""
            }
            guard i < bytes.count else {
                throw fail("<\(String(decoding: open.last ?? [], as: UTF8.self))> is not closed")
            }
            if peek(0) != UInt8(ascii: "<") {
                try text()
            } else if starts("<!--") {
                try comment()
            } else if starts("<![CDATA[") {
                guard !open.isEmpty else { throw fail("CDATA outside the root element") }
                try skip(opening: 9, past: "]]>", what: "CDATA section")
            } else if starts("<?") {
                try skip(opening: 2, past: "?>", what: "processing instruction")
            } else if starts("</") {
                i += 2
                let name = try self.name()
                skipSpace()
                guard peek(0) == UInt8(ascii: ">") else { throw fail("end tag not closed by >") }
                i += 1
                guard let top = open.popLast(), top.elementsEqual(name) else {
                    throw fail("end tag </\(String(decoding: name, as: UTF8.self))> does not match the open element")
                }
            } else if starts("<!") {
                throw fail(open.isEmpty && root == nil ? "a DOCTYPE is not allowed" : "markup declaration in content")
            } else {
                i += 1
                let name = try self.name()
                if root == nil { root = String(decoding: name, as: UTF8.self) }
                let empty = try attributes()
                if !empty { open.append(name) }
            }
        }
    }

    /// Attributes up to the tag's end; true for `/>`.
    private mutating func attributes() throws(Malformed) -> Bool {
        var seen: Set<ArraySlice<UInt8>> = []
        while true {
            let spaced = skipSpace()
            if starts("/>") {
                i += 2
                return true
            }
            if peek(0) == UInt8(ascii: ">") {
                i += 1
                return false
            }
            guard spaced else { throw fail("attributes must be separated by white space") }
            let name = try self.name()
            guard seen.insert(name).inserted else {
                throw fail("attribute \(String(decoding: name, as: UTF8.self)) appears twice")
            }
            skipSpace()
            guard peek(0) == UInt8(ascii: "=") else { throw fail("attribute without =") }
            i += 1
            skipSpace()
            guard let quote = peek(0), quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else {
                throw fail("attribute value not quoted")
            }
            i += 1
            while true {
                guard let b = peek(0) else { throw fail("attribute value not closed") }
                if b == quote { break }
                if b == UInt8(ascii: "<") { throw fail("< in an attribute value") }
                if b == UInt8(ascii: "&") { try reference() } else { try character(b) }
            }
            i += 1
        }
    }

    private mutating func text() throws(Malformed) {
        while let b = peek(0), b != UInt8(ascii: "<") {
            if b == UInt8(ascii: "&") { try reference() } else { try character(b) }
        }
    }

    /// One byte of text: a control character other than tab and line ends is not XML.
    private mutating func character(_ b: UInt8) throws(Malformed) {
        guard b >= 0x20 || b == 0x09 || b == 0x0A || b == 0x0D else {
            throw fail("control character \(b) is not allowed in XML")
        }
        i += 1
    }

    /// `&amp;` and the other four, `&#…;`, `&#x…;`.
    private mutating func reference() throws(Malformed) {
        let start = i
        i += 1
        guard let end = bytes[i...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
            throw Malformed(offset: start, reason: "& not starting a reference")
        }
        let body = bytes[i..<end]
        i = end + 1
        let named: [[UInt8]] = [
            Array("amp".utf8), Array("lt".utf8), Array("gt".utf8), Array("quot".utf8), Array("apos".utf8),
        ]
        if named.contains(where: { body.elementsEqual($0) }) { return }
        if body.first == UInt8(ascii: "#") {
            let hex = body.dropFirst().first == UInt8(ascii: "x")
            let digits = body.dropFirst(hex ? 2 : 1)
            if let value = UInt32(String(decoding: digits, as: UTF8.self), radix: hex ? 16 : 10),
                !digits.isEmpty, XMLText.isXMLChar(value), Unicode.Scalar(value) != nil
            {
                return
            }
        }
        throw Malformed(offset: start, reason: "unknown or malformed reference")
    }

    private mutating func comment() throws(Malformed) { try skip(opening: 4, past: "-->", what: "comment") }

    /// White space, comments and processing instructions, as may surround the root.
    private mutating func miscellany() throws(Malformed) {
        while true {
            skipSpace()
            if starts("<!--") {
                try comment()
            } else if starts("<?") {
                try skip(opening: 2, past: "?>", what: "processing instruction")
            } else {
                return
            }
        }
    }

    private mutating func name() throws(Malformed) -> ArraySlice<UInt8> {
        let start = i
        while let b = peek(0), Self.isNameByte(b) { i += 1 }
        guard i > start, let first = bytes[start...].first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first),
            first != UInt8(ascii: "-"), first != UInt8(ascii: ".")
        else { throw fail("a name was expected") }
        return bytes[start..<i]
    }

    private static func isNameByte(_ b: UInt8) -> Bool {
        b >= 0x80 || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(b)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) || b == UInt8(ascii: "_") || b == UInt8(ascii: ":")
            || b == UInt8(ascii: "-") || b == UInt8(ascii: ".")
    }

    @discardableResult
    private mutating func skipSpace() -> Bool {
        let start = i
        while let b = peek(0), b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { i += 1 }
        return i > start
    }

    /// Past `terminator`, searched for after the `opening` bytes (so that `<!-->` is not a comment).
    private mutating func skip(opening: Int, past terminator: String, what: String) throws(Malformed) {
        let t = Array(terminator.utf8)
        let start = i
        i += opening
        while i + t.count <= bytes.count {
            if bytes[i..<(i + t.count)].elementsEqual(t) {
                i += t.count
                return
            }
            i += 1
        }
        throw Malformed(offset: start, reason: "\(what) not closed")
    }

    private func starts(_ prefix: String) -> Bool { bytes[i...].starts(with: prefix.utf8) }

    private func peek(_ ahead: Int) -> UInt8? { i + ahead < bytes.count ? bytes[i + ahead] : nil }

    private func fail(_ reason: String) -> Malformed { Malformed(offset: i, reason: reason) }
}
