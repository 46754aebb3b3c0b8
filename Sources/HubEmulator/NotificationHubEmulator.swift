import Foundation
import News
import NotificationHubs
import Synchronization

/// A Notification Hubs–compatible service kept in memory: registrations, installations, tag
/// routing, template rendering, SAS checks, inspection and fault injection.
public final class NotificationHubEmulator: Sendable {
    /// Start-up settings.
    public struct Configuration: Sendable {
        /// The hubs that exist; empty means any hub name is created on first use.
        public var hubs: [String] = []
        /// Rendered payloads kept per notification for inspection.
        public var samplePayloads = 3
        /// Notifications kept in the delivery log.
        public var keepDeliveries = 100_000
        public var policy = AccessPolicy.generated()
        public init() {}
    }

    public let configuration: Configuration
    public let faults = FaultInjector()
    let log: DeliveryLog
    let scheduler = ScheduledSends()
    private let stores = Mutex<[String: HubStore]>([:])
    let clock: @Sendable () -> Double

    public init(
        configuration: Configuration = Configuration(),
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.configuration = configuration
        self.clock = clock
        log = DeliveryLog(capacity: configuration.keepDeliveries)
        stores.withLock { stores in for hub in configuration.hubs { stores[hub] = HubStore() } }
    }

    /// The hub's store, created on first use unless the hub list is fixed.
    func store(_ hub: String) -> HubStore? {
        stores.withLock { stores in
            if let store = stores[hub] { return store }
            guard configuration.hubs.isEmpty else { return nil }
            let store = HubStore()
            stores[hub] = store
            return store
        }
    }

    /// Registrations across every hub (for stats).
    var registrationCount: Int { stores.withLock { $0.values.map(\.registrationCount).reduce(0, +) } }

    /// Answers one request.
    public func handle(_ request: EmulatorRequest) -> EmulatorResponse {
        let parts = request.path.split(separator: "/").map(String.init)
        if parts.first == "_emulator" { return inspect(request, parts) }
        guard let hub = parts.first else { return .error(404, "No hub in the path") }
        guard request.queryValue("api-version") != nil else {
            return .error(400, "The api-version query parameter is required")
        }
        guard let store = store(hub) else { return .error(404, "The hub \(hub) was not found") }
        let resource = "http://\(request.host)/\(hub)"
        let route = Array(parts.dropFirst())
        let needed: AccessPolicy.Rights =
            switch route.first {
            case "messages", "schedulednotifications": .send
            case "tags": .manage
            default: .listen
            }
        do {
            try configuration.policy.authorize(
                request.header("authorization"),
                resource: resource,
                needs: needed,
                now: clock()
            )
        } catch {
            log.recordStatus(401)
            return .error(401, error.detail)
        }
        switch (request.method, route.count, route.first) {
        case ("POST", 1, "messages"): return send(request, hub: hub, store: store)
        case ("GET", 2, "messages"): return notificationDetails(id: route[1], hub: hub, host: request.host)
        case ("POST", 1, "schedulednotifications"): return schedule(request, hub: hub, store: store)
        case ("DELETE", 2, "schedulednotifications"): return cancelScheduled(id: route[1], hub: hub)
        case ("POST", 1, "registrationIDs"):
            return EmulatorResponse(
                status: 201,
                headers: [
                    (
                        "Location",
                        "http://\(request.host)/\(hub)/registrations/\(newRegistrationID())?api-version=2020-06"
                    )
                ]
            )
        case ("POST", 1, "registrations"):
            return createRegistration(request, id: newRegistrationID(), hub: hub, store: store)
        case ("GET", 1, "registrations"): return registrations(request, tag: nil, hub: hub, store: store)
        case (_, 2, "registrations"): return registration(request, id: route[1], hub: hub, store: store)
        case ("GET", 3, "tags") where route[2] == "registrations":
            return registrations(request, tag: route[1], hub: hub, store: store)
        case (_, 2, "installations"): return installation(request, id: route[1], store: store)
        default: return .error(404, "No such endpoint: \(request.method) \(request.path)")
        }
    }

    /// A registration id as the hub makes them: digits and a dash, unique in practice.
    private func newRegistrationID() -> String {
        "\(Int64(clock() * 1000))-\(UInt32.random(in: 0...UInt32.max))"
    }
}
