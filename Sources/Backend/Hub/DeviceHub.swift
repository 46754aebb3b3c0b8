import NotificationHubs

/// The hub operations the backend needs, so the API can be tested against the emulator or a double.
public protocol DeviceHub: Sendable {
    func createRegistrationID() async throws(HubError) -> String
    func upsertRegistration(_ registration: Registration, id: String) async throws(HubError)
    func deleteRegistration(id: String) async throws(HubError)
}

/// A hub call that failed; `gone` is NH's 410 for a registration it no longer knows.
public struct HubError: Error, Sendable, CustomStringConvertible {
    public let status: Int?
    public let description: String
    public var isGone: Bool { status == 410 }
    public var isNotFound: Bool { status == 404 }

    public init(status: Int?, description: String) {
        self.status = status
        self.description = description
    }
}

/// `DeviceHub` over the product's Notification Hubs client (cached SAS, retries).
public struct NotificationHubDevices: DeviceHub {
    let client: NotificationHubClient

    public init(client: NotificationHubClient) { self.client = client }

    public func createRegistrationID() async throws(HubError) -> String {
        do { return try await client.createRegistrationID() } catch { throw Self.wrap(error) }
    }

    public func upsertRegistration(_ registration: Registration, id: String) async throws(HubError) {
        do { try await client.upsertRegistration(registration, id: id) } catch { throw Self.wrap(error) }
    }

    public func deleteRegistration(id: String) async throws(HubError) {
        do { try await client.deleteRegistration(id: id) } catch { throw Self.wrap(error) }
    }

    /// The client's failure text names the status and the hub's answer, never the registration's body.
    static func wrap(_ failure: SendFailure) -> HubError {
        HubError(status: failure.status, description: failure.description)
    }
}

/// The registration each platform's devices get: a template, so one template send reaches them all.
public enum DeviceTemplates {
    /// Seed 000's template (`simpleAPNSTemplate`, expiry 0) plus `secureId`, the key seed 001's client reads
    /// to fetch a secure payload (`"$(id)"`: the item's id, which is all a secure item sends).
    public static let apns = Registration.Template(
        body: #"{"aps":{"alert":"$(messageParam)"},"secureId":"$(id)"}"#,
        name: "simpleAPNSTemplate",
        expiry: "0"
    )
    public static let fcmv1 = Registration.Template(
        body: #"{"message":{"notification":{"body":"$(messageParam)"},"data":{"secureId":"$(id)"}}}"#,
        name: "simpleFCMTemplate"
    )
    public static let wns = Registration.Template(
        body:
            #"<toast launch="$(id)"><visual><binding template="ToastText01"><text id="1">$(messageParam)</text></binding></visual></toast>"#,
        name: "simpleWNSTemplate"
    )
}
