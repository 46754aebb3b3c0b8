import Foundation
import News
import Newsroom
import NotificationHubs
import Synchronization
import Testing

@testable import Backend

/// The API's handlers in process, on a real SQLite file, with a hub double that can say 410.
@Suite struct BackendAPITests {
    /// A hub that hands out ids and forgets the ones it is told to (answering 410 for them).
    final class ScriptedHub: DeviceHub {
        struct State {
            var next = 0
            var gone: Set<String> = []
            var registrations: [String: Registration] = [:]
        }
        let state = Mutex(State())

        func createRegistrationID() async throws(HubError) -> String {
            state.withLock {
                $0.next += 1
                return "hub-\($0.next)"
            }
        }
        func upsertRegistration(_ registration: Registration, id: String) async throws(HubError) {
            let gone = state.withLock { s -> Bool in
                if s.gone.contains(id) { return true }
                s.registrations[id] = registration
                return false
            }
            if gone { throw HubError(status: 410, description: "gone") }
        }
        func deleteRegistration(id: String) async throws(HubError) {
            let existed = state.withLock { $0.registrations.removeValue(forKey: id) != nil }
            if !existed { throw HubError(status: 404, description: "not found") }
        }
    }

    struct NoPublisher: ItemPublisher {
        func publish(_ item: NewsItem) async throws(NewsPublisher.PublishFailed) {}
    }

    let alice = Principal(name: "alice", roles: [])
    let handle = String(repeating: "9A", count: 32)

    func withAPI(_ body: (BackendAPI, SQLiteStore, ScriptedHub) async throws -> Void) async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hubcast-api-\(UUID().uuidString).sqlite"
        ).path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try await SQLiteStore.open(path: path)
        try await store.migrate()
        let hub = ScriptedHub()
        let api = BackendAPI(
            configuration: .init(),
            store: store,
            hub: hub,
            publisher: NoPublisher(),
            authenticator: Authenticator(users: UsersFile(), bearer: nil),
            logger: .init(label: "test")
        )
        do {
            try await body(api, store, hub)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    @Test func aRegistrationTheHubForgotIsRecreatedUnderTheSameClientID() async throws {
        try await withAPI { api, store, hub in
            _ = try await api.createRegistrationID(caller: alice, handle: handle)
            let id = try #require(try await store.registrations(owner: "alice").first?.id)
            hub.state.withLock { _ = $0.gone.insert(id) }
            let body = Array(#"{"Platform":"apns","Handle":"\#(handle)","Tags":["World"]}"#.utf8)
            #expect(try await api.upsertRegistration(caller: alice, id: id, body: body).status == .ok)
            let row = try #require(try await store.registration(id: id))
            #expect(row.id == id && row.hubID != id)
            #expect(hub.state.withLock { $0.registrations[row.hubID]?.tags } == ["World", "username:alice"])
            #expect(try await api.deleteRegistration(caller: alice, id: id).status == .ok)
            #expect(hub.state.withLock { $0.registrations.isEmpty })
        }
    }

    /// Microsoft's sample Android clients send `fcm` (older ones `gcm`): both register as FCM v1,
    /// template and tags as for `fcmv1`; repeated tags count once.
    @Test func olderFCMPlatformNamesRegisterAsFCMv1() async throws {
        let token = "dGVzdA:APA91b" + String(repeating: "x", count: 140)
        try await withAPI { api, store, hub in
            for name in ["fcm", "GCM", "fcmv1"] {
                _ = try await api.createRegistrationID(caller: alice, handle: token)
                let id = try #require(try await store.registrations(owner: "alice").last?.id)
                let tags = Array(repeating: #""World""#, count: 200).joined(separator: ",")
                let body = Array(#"{"Platform":"\#(name)","Handle":"\#(token)","Tags":[\#(tags)]}"#.utf8)
                #expect(try await api.upsertRegistration(caller: alice, id: id, body: body).status == .ok, "\(name)")
                let row = try #require(try await store.registration(id: id))
                let registered = try #require(hub.state.withLock { $0.registrations[row.hubID] })
                #expect(
                    registered.platform == .fcmv1 && registered.template?.body == DevicePlatform.fcmv1.template.body,
                    "\(name)"
                )
                #expect(registered.tags == ["World", "username:alice"] && row.platform == "fcmv1", "\(name)")
            }
        }
    }

    @Test func audienceOfTagExpressionItems() async throws {
        try await withAPI { api, store, _ in
            _ = try await api.createRegistrationID(caller: alice, handle: handle)
            let id = try #require(try await store.registrations(owner: "alice").first?.id)
            let body = Array(#"{"Platform":"apns","Handle":"\#(handle)","Tags":["Sports","World"]}"#.utf8)
            _ = try await api.upsertRegistration(caller: alice, id: id, body: body)
            let item = NewsItem(id: "x", headline: "Derby", tagExpression: "Sports && !Politics", secure: true)
            let payload = try #require(
                PayloadKeeper.payload(of: item, category: "Sports", defaultExpiry: 4_000_000_000)
            )
            #expect(try await api.isInAudience(alice, payload))
            #expect(!(try await api.isInAudience(Principal(name: "bob", roles: []), payload)))
            let politics = try #require(
                PayloadKeeper.payload(
                    of: NewsItem(id: "y", headline: "Vote", secure: true),
                    category: "Politics",
                    defaultExpiry: 4_000_000_000
                )
            )
            #expect(!(try await api.isInAudience(alice, politics)))
        }
    }

    @Test func expiredPayloadsAreGone() async throws {
        try await withAPI { _, store, _ in
            _ = try await store.insertPayload(
                SecurePayload(id: "old", users: ["alice"], tagExpression: nil, payload: "p", expiresAt: 100)
            )
            _ = try await store.insertPayload(
                SecurePayload(id: "new", users: ["alice"], tagExpression: nil, payload: "p", expiresAt: 300)
            )
            #expect(try await store.payload(id: "old", now: 200) == nil)
            #expect(try await store.payload(id: "new", now: 200)?.payload == "p")
            #expect(try await store.deleteExpiredPayloads(now: 200) == 1)
            // The first writer wins: a replayed Kafka message does not overwrite a stored payload.
            #expect(
                !(try await store.insertPayload(
                    SecurePayload(id: "new", users: ["bob"], tagExpression: nil, payload: "q", expiresAt: 300)
                ))
            )
        }
    }
}
