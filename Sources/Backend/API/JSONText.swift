import Foundation

/// Small JSON for answers and request bodies, via Foundation's serializer (escaping done right).
enum JSONText {
    enum Value: Sendable {
        case string(String)
        case int(Int64)
        case bool(Bool)
    }

    static func object(_ members: [String: Value]) -> [UInt8] {
        var dict: [String: Any] = [:]
        for (key, value) in members {
            switch value {
            case .string(let s): dict[key] = s
            case .int(let i): dict[key] = i
            case .bool(let b): dict[key] = b
            }
        }
        let data =
            (try? JSONSerialization.data(withJSONObject: dict, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
        return Array(data)
    }

    /// A JSON string (seed 003's `POST /api/register` answers the new id this way).
    static func string(_ s: String) -> [UInt8] {
        let data =
            (try? JSONSerialization.data(withJSONObject: s, options: [.fragmentsAllowed, .withoutEscapingSlashes]))
            ?? Data("\"\"".utf8)
        return Array(data)
    }
}
