/// How urgently an item goes out: `breaking` before anything waiting, `bulk` with what is left.
/// Ordered by urgency, so `Priority.breaking > .normal`.
public enum Priority: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    case bulk = 0
    case normal = 1
    case breaking = 2

    /// The name in news items, flags and metrics labels.
    public var name: String {
        switch self {
        case .bulk: "bulk"
        case .normal: "normal"
        case .breaking: "breaking"
        }
    }

    public var description: String { name }

    public init?(name: String) {
        guard let found = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = found
    }

    /// Most urgent first.
    public static let mostUrgentFirst: [Priority] = allCases.reversed()

    public static func < (a: Priority, b: Priority) -> Bool { a.rawValue < b.rawValue }
}
