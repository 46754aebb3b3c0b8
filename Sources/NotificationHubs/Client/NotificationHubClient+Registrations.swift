import Foundation

/// Registration and installation management: the calls the emulator tests, the demo and the backend use.
extension NotificationHubClient {
    private static let atomContentType = HTTPHeader("Content-Type", "application/atom+xml;type=entry;charset=utf-8")

    /// `POST /{hub}/registrationIDs`: a new registration id, from `Location`.
    public func createRegistrationID() async throws(SendFailure) -> String {
        let (response, _, _) = try await perform(request(.post, "registrationIDs"))
        guard let location = response.header("Location"), let id = Self.lastPathComponent(of: location) else {
            throw SendFailure(
                reason: .rejected,
                status: response.status,
                message: "no registration id in Location",
                attempts: 1,
                throttledAttempts: 0,
                firstAttemptAt: 0,
                lastAttemptAt: 0
            )
        }
        return id
    }

    /// `PUT /{hub}/registrations/{id}`: creates or replaces the registration.
    public func upsertRegistration(_ registration: Registration, id: String) async throws(SendFailure) {
        var entry = registration
        entry.id = nil
        _ = try await perform(
            request(.put, "registrations/\(id)", headers: [Self.atomContentType], body: Array(entry.atomEntry.utf8))
        )
    }

    /// `GET /{hub}/registrations/{id}`.
    public func registration(id: String) async throws(SendFailure) -> Registration {
        let (response, _, _) = try await perform(request(.get, "registrations/\(id)"))
        do {
            var registration = try Registration(atomEntry: String(decoding: response.body, as: UTF8.self))
            registration.id = registration.id ?? id
            return registration
        } catch {
            throw SendFailure(
                reason: .rejected,
                status: response.status,
                message: error.description,
                attempts: 1,
                throttledAttempts: 0,
                firstAttemptAt: 0,
                lastAttemptAt: 0
            )
        }
    }

    /// `DELETE /{hub}/registrations/{id}` with `If-Match: *`.
    public func deleteRegistration(id: String) async throws(SendFailure) {
        _ = try await perform(request(.delete, "registrations/\(id)", headers: [HTTPHeader("If-Match", "*")]))
    }

    /// `PUT /{hub}/installations/{id}`.
    public func upsertInstallation(_ installation: Installation) async throws(SendFailure) {
        _ = try await perform(
            request(
                .put,
                "installations/\(installation.installationId)",
                headers: [Self.json],
                body: Self.encode(installation)
            )
        )
    }

    /// `PATCH /{hub}/installations/{id}` with JSON Patch operations.
    public func patchInstallation(id: String, _ operations: [InstallationPatch]) async throws(SendFailure) {
        _ = try await perform(
            request(.patch, "installations/\(id)", headers: [Self.json], body: Self.encode(operations))
        )
    }

    /// `GET /{hub}/installations/{id}`.
    public func installation(id: String) async throws(SendFailure) -> Installation {
        let (response, _, _) = try await perform(request(.get, "installations/\(id)"))
        guard let installation = try? JSONDecoder().decode(Installation.self, from: Data(response.body)) else {
            throw SendFailure(
                reason: .rejected,
                status: response.status,
                message: "installation body is not JSON",
                attempts: 1,
                throttledAttempts: 0,
                firstAttemptAt: 0,
                lastAttemptAt: 0
            )
        }
        return installation
    }

    /// `DELETE /{hub}/installations/{id}`.
    public func deleteInstallation(id: String) async throws(SendFailure) {
        _ = try await perform(request(.delete, "installations/\(id)"))
    }

    private static let json = HTTPHeader("Content-Type", "application/json")

    private static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(value)) ?? Data())
    }

    static func lastPathComponent(of location: String) -> String? {
        let path = location.split(separator: "?", maxSplits: 1).first ?? ""
        return path.split(separator: "/").last.map(String.init)
    }
}
