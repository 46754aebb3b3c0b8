import Broadcast
import TextFormats
import Yams

/// The routes file of `hubcast run --routes`: the hubs one pipeline sends to, and which items go
/// to which. YAML, read with Yams (a maintained parser of the whole language: anchors, flow style,
/// quoting). Every value is read as the text it is written as, so a tenant called `no` or `1` is
/// a name, not a boolean or a number.
///
/// ```yaml
/// hubs:
///   europe:
///     hub: news-eu                                  # the notification hub's name
///     connection-string-file: /run/secrets/eu       # relative paths: to this file's folder
///     max-rate: 500                                 # optional: its known quota, sends a second
///   americas:
///     hub: news-us
///     connection-string-file: /run/secrets/us
/// categories:           # category → hub
///   Sports: americas
/// tenants:              # an item's `tenant` → hub; wins over its category
///   brand-b: americas
/// default: europe       # every other item; required unless every category is routed
/// ```
public struct RoutesFile: Sendable, Equatable {
    /// One hub as the file names it.
    public struct Hub: Sendable, Equatable {
        /// The name the file gives it: in routes, logs, metrics (`hub` dimension) and dead letters.
        public var name: String
        /// The notification hub's name in its namespace.
        public var hubName: String
        /// Where its connection string is, resolved against the file's folder.
        public var connectionStringFile: String
        /// Its known quota, in sends per second.
        public var maxRate: Double?
    }

    /// In the order the file lists them: hub numbers are places in this list.
    public var hubs: [Hub]
    public var routes: HubRoutes

    static let topKeys = ["hubs", "categories", "tenants", "default"]
    static let hubKeys = ["hub", "connection-string-file", "max-rate"]

    /// Parses `text`, checking every route against `categories` (the run's). `folder`: the folder
    /// relative connection-string paths are resolved against.
    public init(parsing text: String, categories: [String], folder: String) throws(RoutesFileError) {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            throw RoutesFileError("not valid YAML: \(error)")
        }
        guard let root, let top = root.mapping else {
            throw RoutesFileError("must be a mapping with hubs (and categories, tenants or default)")
        }
        let fields = try Self.fields(top, allowed: Self.topKeys, in: "the file")
        guard let hubsNode = fields["hubs"], let hubsMap = hubsNode.mapping, !hubsMap.isEmpty else {
            throw RoutesFileError("hubs: name at least one hub, each with hub and connection-string-file")
        }
        var hubs: [Hub] = []
        for (key, value) in hubsMap {
            let name = try Self.text(of: key, "a hub's name")
            guard TagSyntax.isTag(name), !name.contains(":") else {
                throw RoutesFileError(
                    "hubs: \(LegibleText.quoted(name)) is not a hub name (1 to 120 of letters, digits and _@#.-)"
                )
            }
            guard let entry = value.mapping else {
                throw RoutesFileError("hubs.\(name): must be a mapping with hub and connection-string-file")
            }
            let hubFields = try Self.fields(entry, allowed: Self.hubKeys, in: "hubs.\(name)")
            let hubName = try Self.text(hubFields["hub"], "hubs.\(name).hub")
            guard let hubName, !hubName.isEmpty else {
                throw RoutesFileError("hubs.\(name).hub: missing: the notification hub's name")
            }
            let path = try Self.text(hubFields["connection-string-file"], "hubs.\(name).connection-string-file")
            guard let path, !path.isEmpty else {
                throw RoutesFileError(
                    "hubs.\(name).connection-string-file: missing: the file holding the hub's connection string"
                )
            }
            var maxRate: Double?
            if let rate = hubFields["max-rate"] {
                let written = try Self.text(of: rate, "hubs.\(name).max-rate")
                guard let value = Double(written), value.isFinite, value > 0, value <= 1_000_000 else {
                    throw RoutesFileError(
                        "hubs.\(name).max-rate: must be a number of sends per second above 0, got \(LegibleText.quoted(written))"
                    )
                }
                maxRate = value
            }
            hubs.append(
                Hub(
                    name: name,
                    hubName: hubName,
                    connectionStringFile: path.hasPrefix("/") ? path : folder + "/" + path,
                    maxRate: maxRate
                )
            )
        }
        let numbers = Dictionary(hubs.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        func hub(_ node: Node, _ field: String) throws(RoutesFileError) -> Int {
            let name = try Self.text(of: node, field)
            guard let number = numbers[name] else {
                throw RoutesFileError(
                    "\(field): names hub \(LegibleText.quoted(name)), which hubs does not list (\(hubs.map(\.name).joined(separator: ", ")))"
                )
            }
            return number
        }
        var byCategory: [String: Int] = [:]
        if let node = fields["categories"] {
            guard let map = node.mapping else { throw RoutesFileError("categories: must map categories to hubs") }
            for (key, value) in map {
                let category = try Self.text(of: key, "a category")
                guard categories.contains(category) else {
                    throw RoutesFileError(
                        "categories: \(LegibleText.quoted(category)) is not one of this run's categories (\(categories.joined(separator: ", ")))"
                    )
                }
                byCategory[category] = try hub(value, "categories.\(category)")
            }
        }
        var byTenant: [String: Int] = [:]
        if let node = fields["tenants"] {
            guard let map = node.mapping else { throw RoutesFileError("tenants: must map tenants to hubs") }
            for (key, value) in map {
                let tenant = try Self.text(of: key, "a tenant")
                guard TagSyntax.isTag(tenant) else {
                    throw RoutesFileError(
                        "tenants: \(LegibleText.quoted(tenant)) is not a tenant (1 to 120 of letters, digits and _@#.:-)"
                    )
                }
                byTenant[tenant] = try hub(value, "tenants.\(tenant)")
            }
        }
        var fallback: Int?
        if let node = fields["default"] { fallback = try hub(node, "default") }
        if fallback == nil, hubs.count > 1 || !byCategory.isEmpty || !byTenant.isEmpty {
            let unrouted = categories.filter { byCategory[$0] == nil }
            guard unrouted.isEmpty else {
                throw RoutesFileError(
                    "no hub for category \(unrouted.joined(separator: ", ")): route it under categories, or name a default hub"
                )
            }
        }
        self.hubs = hubs
        routes = HubRoutes(
            hubs: hubs.map(\.name),
            byTenant: byTenant,
            byCategory: byCategory,
            fallback: fallback ?? (hubs.count == 1 && byCategory.isEmpty && byTenant.isEmpty ? 0 : nil)
        )
    }

    /// A mapping's members by key, refusing keys not in `allowed`.
    private static func fields(
        _ mapping: Node.Mapping,
        allowed: [String],
        in place: String
    ) throws(RoutesFileError) -> [String: Node] {
        var fields: [String: Node] = [:]
        for (key, value) in mapping {
            let name = try text(of: key, "a key of \(place)")
            guard allowed.contains(name) else {
                throw RoutesFileError(
                    "\(place): unknown key \(LegibleText.quoted(name)) (expected \(allowed.joined(separator: ", ")))"
                )
            }
            // A key given twice Yams refuses itself, naming it.
            fields[name] = value
        }
        return fields
    }

    /// The text of a member that may be absent.
    private static func text(_ node: Node?, _ field: String) throws(RoutesFileError) -> String? {
        guard let node else { return nil }
        return try text(of: node, field)
    }

    /// A scalar's text exactly as written (never a YAML boolean or number).
    private static func text(of node: Node, _ field: String) throws(RoutesFileError) -> String {
        guard let scalar = node.scalar else {
            throw RoutesFileError("\(field): must be a single value, not a list or a mapping")
        }
        return scalar.string
    }
}

/// Why a routes file was refused; names the field, never a secret (the file holds only paths).
public struct RoutesFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}
