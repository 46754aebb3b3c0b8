extension JSONWriter {
    /// `value` as JSON text on its own (see `value(_:)`).
    public static func bytes(of value: JSONValue) -> [UInt8] {
        var w = JSONWriter()
        w.value(value)
        return w.bytes
    }

    /// Writes a parsed value back as JSON, members of each object in order of their names (a
    /// dictionary keeps none, and the same value must always give the same bytes). Without
    /// recursion: input decides how deep a value nests.
    public mutating func value(_ value: JSONValue) {
        enum Step {
            case value(JSONValue)
            case key(String)
            case endObject
            case endArray
        }
        var steps: [Step] = [.value(value)]
        while let step = steps.popLast() {
            switch step {
            case .key(let name): key(name)
            case .endObject: endObject()
            case .endArray: endArray()
            case .value(.null): null()
            case .value(.bool(let b)): bool(b)
            case .value(.number(let n)): number(n)
            case .value(.string(let s)): string(s)
            case .value(.array(let elements)):
                beginArray()
                steps.append(.endArray)
                for element in elements.reversed() { steps.append(.value(element)) }
            case .value(.object(let members)):
                beginObject()
                steps.append(.endObject)
                for (name, member) in members.sorted(by: { $0.key > $1.key }) {
                    steps.append(.value(member))
                    steps.append(.key(name))
                }
            }
        }
    }

    /// A number as JSON writes it: integers (up to 2⁵³, where a double stops being exact) without
    /// a fraction, so that `"content-available": 1` stays `1`; `null` for what JSON cannot carry.
    public mutating func number(_ value: Double) {
        guard value.isFinite else { return null() }
        if value == value.rounded(), abs(value) <= 9_007_199_254_740_992 {
            number(Int64(value))
        } else {
            raw(value.description.utf8)
        }
    }
}
