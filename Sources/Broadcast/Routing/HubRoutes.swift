/// Which hub each news item goes to, when the pipeline sends to several: by the item's `tenant`
/// first, then by its category, else to the default hub. Hubs are numbered in the order they are
/// named; the pipeline's engine, senders and metrics use the same numbers.
public struct HubRoutes: Sendable, Equatable {
    /// The hubs' names, by number: in logs, metrics and dead letters.
    public let hubs: [String]
    private let byTenant: [String: Int]
    private let byCategory: [String: Int]
    /// Where an item goes that no tenant or category names; nil: nowhere (it is invalid).
    private let fallback: Int?

    /// One hub, every item to it: what a run without a routes file does.
    public static func single(_ hub: String) -> HubRoutes {
        HubRoutes(hubs: [hub], byTenant: [:], byCategory: [:], fallback: 0)
    }

    /// `hubs` by number; the maps and `fallback` name hubs by number too.
    public init(hubs: [String], byTenant: [String: Int], byCategory: [String: Int], fallback: Int?) {
        self.hubs = hubs
        self.byTenant = byTenant
        self.byCategory = byCategory
        self.fallback = fallback
    }

    /// Every item goes to hub 0.
    public var isSingle: Bool { hubs.count == 1 && byTenant.isEmpty && byCategory.isEmpty && fallback == 0 }

    /// The hub an item goes to, or why it goes nowhere.
    public func hub(category: String, tenant: String?) -> Result<Int, RouteError> {
        if let tenant, let hub = byTenant[tenant] { return .success(hub) }
        if let hub = byCategory[category] ?? fallback { return .success(hub) }
        return .failure(RouteError(category: category, tenant: tenant))
    }
}

/// An item that no route takes: the routes file names neither its tenant nor its category and
/// has no default hub. Safe to log: names only.
public struct RouteError: Error, Sendable, Equatable, CustomStringConvertible {
    public let category: String
    public let tenant: String?

    public var description: String {
        let tenantText = tenant.map { "tenant \"\($0)\" nor " } ?? ""
        return "no hub for it: the routes name \(tenantText)category \"\(category)\" and give no default hub"
    }

    /// The field to blame: the tenant when it has one (a route for it is what is missing).
    public var field: String { tenant == nil ? "category" : "tenant" }
}
