import Foundation
import NotificationHubs
import Synchronization
import Testing

@testable import Backend

/// The lockout state machine, with its clock in the test's hands.
@Suite struct LoginThrottleTests {
    @Test func locksAfterMaxFailuresAndUnlocksAfterLockout() {
        var throttle = LoginThrottle(
            perUser: .init(maxFailures: 3, window: 60, lockout: 30),
            perAddress: .init(maxFailures: 100)
        )
        let keys: [LoginThrottle.Key] = [.user("bob"), .address("10.0.0.1")]
        for t in 0..<2 {
            #expect(throttle.decide(keys, now: Double(t)) == .allowed)
            throttle.recordFailure(keys, now: Double(t))
        }
        #expect(throttle.decide(keys, now: 2) == .allowed)
        throttle.recordFailure(keys, now: 2)
        #expect(throttle.decide(keys, now: 3) == .locked(retryAfter: 29))
        // Another user from the same address is not locked by Bob's count.
        #expect(throttle.decide([.user("alice"), .address("10.0.0.1")], now: 3) == .allowed)
        #expect(throttle.decide(keys, now: 32.5) == .allowed)
    }

    @Test func failuresOutsideTheWindowAreForgotten() {
        var throttle = LoginThrottle(perUser: .init(maxFailures: 2, window: 10, lockout: 10))
        throttle.recordFailure([.user("bob")], now: 0)
        throttle.recordFailure([.user("bob")], now: 11)
        #expect(throttle.decide([.user("bob")], now: 12) == .allowed)
    }

    @Test func successClearsTheUserButNotTheAddress() {
        var throttle = LoginThrottle(perUser: .init(maxFailures: 2), perAddress: .init(maxFailures: 3))
        throttle.recordFailure([.user("bob"), .address("a")], now: 0)
        throttle.recordSuccess(user: "bob")
        throttle.recordFailure([.user("bob"), .address("a")], now: 1)
        #expect(throttle.decide([.user("bob")], now: 1) == .allowed)
        throttle.recordFailure([.user("eve"), .address("a")], now: 2)
        #expect(throttle.decide([.address("a")], now: 2) == .locked(retryAfter: 300))
    }

    @Test func memoryStaysBoundedUnderAFloodOfNames() {
        var throttle = LoginThrottle(perUser: .init(maxFailures: 5), maxKeys: 100)
        for i in 0..<1000 { throttle.recordFailure([.user("u\(i)")], now: Double(i) / 1000) }
        #expect(throttle.counters.count <= 100)
    }
}

@Suite struct ValidationTests {
    @Test func handlesPerPlatform() {
        #expect(DevicePlatform.apns.accepts(handle: String(repeating: "aB", count: 32)))
        #expect(!DevicePlatform.apns.accepts(handle: String(repeating: "aB", count: 31)))
        #expect(!DevicePlatform.apns.accepts(handle: String(repeating: "zz", count: 32)))
        #expect(DevicePlatform.fcmv1.accepts(handle: "dGVzdA:APA91b" + String(repeating: "x", count: 140)))
        #expect(!DevicePlatform.fcmv1.accepts(handle: "short"))
        #expect(DevicePlatform.wns.accepts(handle: "https://db5.notify.windows.com/?token=AwYAAAB"))
        #expect(!DevicePlatform.wns.accepts(handle: "https://evil.example/?x=.notify.windows.com"))
        // Parsed as a URI, not matched as text: whatever a parser makes of these, they are not WNS hosts.
        for hostile in [
            #"https://evil.test\@x.notify.windows.com/?token=x"#, "https://evil.test@x.notify.windows.com/?token=x",
            "https://user:pw@db5.notify.windows.com/?token=x", "http://db5.notify.windows.com/?token=x",
            "https://db5.notify.windows.com:8443/?token=x", "https://notify.windows.com.evil.test/?token=x",
            "https://db5.notify.windows.com\u{0}/?token=x", "https://db5%2Enotify.windows.com/?token=x",
        ] {
            #expect(!DevicePlatform.wns.accepts(handle: hostile), "\(hostile)")
        }
        #expect(DevicePlatform.wns.accepts(handle: "https://wns2-by3p.notify.windows.com/w/?token=BQYAAABx%2b"))
        #expect(DevicePlatform(clientName: "FCM") == .fcmv1 && DevicePlatform(clientName: "gcm") == .fcmv1)
        #expect(DevicePlatform(clientName: "apns") == .apns && DevicePlatform(clientName: "baidu") == nil)
    }

    @Test func windowsRegistrationsRoundTripThroughAtom() throws {
        let registration = Registration(
            platform: .windows,
            handle: "https://db5.notify.windows.com/?token=AwY",
            tags: ["World", "username:alice"],
            template: DevicePlatform.wns.template
        )
        #expect(registration.descriptionElement == "WindowsTemplateRegistrationDescription")
        let parsed = try Registration(atomEntry: registration.atomEntry)
        #expect(parsed.platform == .windows && parsed.handle == registration.handle && parsed.tags == registration.tags)
        #expect(parsed.template?.body == DevicePlatform.wns.template.body)
    }

    @Test func tagsFromClients() throws {
        let policy = TagPolicy(allowed: ["World", "Sports"])
        #expect(try policy.tags(from: ["World", "World"], owner: "alice") == ["World", "username:alice"])
        #expect(throws: APIError.self) { try policy.tags(from: ["username:bob"], owner: "alice") }
        #expect(throws: APIError.self) { try policy.tags(from: ["bad tag"], owner: "alice") }
    }
}

@Suite struct AuthenticatorTests {
    @Test func aRememberedPasswordNeverLetsAWrongOneIn() async throws {
        var users = UsersFile()
        try users.set(name: "alice", password: "right", roles: [], cost: 4)
        let auth = Authenticator(users: users, bearer: nil, cacheSeconds: 300)
        func basic(_ password: String) -> String { "Basic " + Data("alice:\(password)".utf8).base64EncodedString() }
        #expect(
            try await auth.authenticate(authorization: basic("right"), address: "a", plainHTTPAllowed: true).name
                == "alice"
        )
        #expect(
            try await auth.authenticate(authorization: basic("right"), address: "a", plainHTTPAllowed: true).name
                == "alice"
        )
        await #expect(throws: Authenticator.Failure.unauthenticated) {
            try await auth.authenticate(authorization: basic("wrong"), address: "a", plainHTTPAllowed: true)
        }
        await #expect(throws: Authenticator.Failure.needsTLS) {
            try await auth.authenticate(authorization: basic("right"), address: "a", plainHTTPAllowed: false)
        }
    }
}

/// Whose word on the client's address and scheme is believed.
@Suite struct TrustedProxiesTests {
    @Test func onlyATrustedPeersForwardingHeadersCount() throws {
        let proxies = try TrustedProxies(parsing: "10.0.0.0/8, 192.168.1.7, fd00::/8")
        #expect(proxies.contains("10.200.3.4") && proxies.contains("192.168.1.7") && proxies.contains("fd12::1"))
        #expect(
            !proxies.contains("192.168.1.8") && !proxies.contains("11.0.0.1") && !proxies.contains("not-an-address")
        )
        #expect(proxies.contains("::ffff:10.1.1.1"), "an IPv4-mapped peer is the IPv4 address")
        // From a trusted proxy: the rightmost untrusted hop is the client; https as the proxy says.
        let through = proxies.origin(
            peer: "10.1.1.1",
            forwardedFor: ["198.51.100.7, 203.0.113.9", "10.2.2.2"],
            forwardedProto: ["https"]
        )
        #expect(through.address == "203.0.113.9" && through.tls)
        // From anyone else the headers are the client's own words: ignored.
        let direct = proxies.origin(peer: "203.0.113.50", forwardedFor: ["1.2.3.4"], forwardedProto: ["https"])
        #expect(direct.address == "203.0.113.50" && !direct.tls)
        // Garbage in the header is not an address.
        #expect(
            proxies.origin(peer: "10.1.1.1", forwardedFor: ["<script>"], forwardedProto: ["http"]) == (
                address: "10.1.1.1", tls: false
            )
        )
        #expect(
            TrustedProxies().origin(peer: "10.1.1.1", forwardedFor: ["1.2.3.4"], forwardedProto: ["https"]).address
                == "10.1.1.1"
        )
        // Ports as load balancers write them; one spelling per address.
        #expect(
            proxies.origin(peer: "10.1.1.1", forwardedFor: ["203.0.113.9:4711"], forwardedProto: []).address
                == "203.0.113.9"
        )
        #expect(
            proxies.origin(peer: "10.1.1.1", forwardedFor: ["[2001:DB8::1]:443"], forwardedProto: []).address
                == "2001:db8::1"
        )
        #expect(
            proxies.origin(peer: "10.1.1.1", forwardedFor: ["::ffff:203.0.113.9"], forwardedProto: []).address
                == "203.0.113.9"
        )
        // Every hop trusted: the nearest, never one further left that the client could have written.
        #expect(
            proxies.origin(peer: "10.1.1.1", forwardedFor: ["10.9.9.9, 10.2.2.2"], forwardedProto: []).address
                == "10.2.2.2"
        )
    }

    @Test func badListsAreRefusedNamingTheEntry() {
        for bad in ["10.0.0.0/33", "fd00::/129", "10.0.0", "example.com", "10.0.0.0/x"] {
            #expect { try TrustedProxies(parsing: bad) } throws: {
                ($0 as? TrustedProxies.Invalid)?.description.contains(
                    bad.split(separator: "/").first.map(String.init) ?? bad
                ) == true
            }
        }
    }
}

/// The PostgreSQL pool's stop is bounded: a pool that never returns cannot hold the backend after
/// SIGTERM.
@Suite struct PoolStopTests {
    @Test func aRunnerThatEndsInTimeIsWaitedForAndOneThatHangsIsNot() async {
        let ended = Task<Void, Never> {}
        #expect(await PostgresPoolService.finished(ended, within: .seconds(60)))
        // A runner that ignores cancellation (a continuation nobody resumes): the wait gives up at its limit.
        let parked = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let hung = Task<Void, Never> { await withCheckedContinuation { c in parked.withLock { $0 = c } } }
        hung.cancel()
        #expect(await PostgresPoolService.finished(hung, within: .milliseconds(50)) == false)
        // Let it end, once it has parked.
        while parked.withLock({ $0 == nil }) { await Task.yield() }
        parked.withLock { $0?.resume() }
        await hung.value
    }
}
