import Foundation
import TestSupport
import Testing

/// Seeds 001–003 end to end over HTTP: the real `hubcast backend`, the emulator as the hub, the dev
/// broker, `hubcast run` carrying the backend's items to the hub; on SQLite and on PostgreSQL.
@Suite(.serialized) struct BackendFlowTests {
    /// Sends a PUT with a malformed chunked body over a raw socket; prints what came back.
    static let rawRequest = #"""
        import socket, sys, urllib.parse
        url = urllib.parse.urlsplit(sys.argv[1])
        request = (f"PUT {sys.argv[2]} HTTP/1.1\r\nHost: {url.hostname}\r\nAuthorization: {sys.argv[3]}\r\n"
                   "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n")
        with socket.create_connection((url.hostname, url.port), timeout=30) as connection:
            connection.sendall(request.encode())
            answer = b""
            while not answer.startswith(b"HTTP/") or b"\r\n" not in answer:
                data = connection.recv(4096)
                if not data: break
                answer += data
        print(answer.decode(errors="replace"))
        """#

    static let appleHandle = String(repeating: "AB12", count: 16)

    @Test(arguments: StoreKind.allCases)
    func seedFlows(store: StoreKind) async throws {
        let harness = try await BackendHarness(store: store)
        defer { harness.stop() }
        let base = try await harness.startBackend()
        try harness.startPipeline()
        let alice = BackendHarness.basic("alice")

        #expect(try await HTTP.call("GET", base + "/healthz").status == 200)
        #expect(try await HTTP.call("GET", base + "/readyz").status == 200)

        // Seed 003: POST /api/register?handle= → a JSON string id.
        let created = try await HTTP.call("POST", base + "/api/register?handle=\(Self.appleHandle)", auth: alice)
        #expect(created.status == 200)
        let id = try #require(
            try JSONSerialization.jsonObject(with: Data(created.body.utf8), options: .fragmentsAllowed) as? String
        )

        // PUT with the seed's body (pretty-printed, as NSJSONWritingPrettyPrinted writes it).
        let registration = """
            {
              "Platform" : "apns",
              "Handle" : "\(Self.appleHandle)",
              "Tags" : [ "World", "Sports" ]
            }
            """
        let put = try await HTTP.call(
            "PUT",
            base + "/api/register/\(id)",
            auth: alice,
            body: registration,
            headers: ["Content-Type: application/json"]
        )
        #expect(put.status == 200, "\(put.body)")
        let atHub = try await harness.hubRegistration(id)
        #expect(atHub.status == 200)
        #expect(atHub.body.contains("username:alice") && atHub.body.contains("World") && atHub.body.contains("Sports"))
        #expect(atHub.body.contains("simpleAPNSTemplate"))

        // A second login on the same device replaces the stale registration.
        let again = try await HTTP.call("POST", base + "/api/register?handle=\(Self.appleHandle)", auth: alice)
        let id2 = try #require(
            try JSONSerialization.jsonObject(with: Data(again.body.utf8), options: .fragmentsAllowed) as? String
        )
        #expect(id2 != id)
        #expect(try await harness.hubRegistration(id).status == 404)
        #expect(
            try await HTTP.call("PUT", base + "/api/register/\(id2)", auth: alice, body: registration).status == 200
        )

        // Seed 003: carol (sender) notifies alice; the hub sends to username:alice only.
        let notify = try await HTTP.call(
            "POST",
            base + "/api/notifications?pns=apns&to_tag=alice",
            auth: BackendHarness.basic("carol"),
            body: #""Hello Alice""#,
            headers: ["Content-Type: application/json"]
        )
        #expect(notify.status == 200, "\(notify.body)")
        let personal = try #require(
            try await harness.waitForDelivery { $0.payloads.contains { $0.contains("Hello Alice") } }
        )
        #expect(personal.tags == "username:alice")
        #expect(personal.matched == 1)

        // Seed 001: a secure notification carries only its id; alice fetches the payload with her credentials.
        let secure = try await HTTP.call(
            "POST",
            base + "/api/notifications?to_tag=alice&secure=true",
            auth: BackendHarness.basic("carol"),
            body: #"{"message":"Your account code is 4711"}"#,
            headers: ["Content-Type: application/json"]
        )
        #expect(secure.status == 200, "\(secure.body)")
        let secureID = try #require(secure.json?["id"] as? String)
        #expect(Int(secureID) != nil, "seed 001's client reads secureId as an integer")
        let pushed = try #require(
            try await harness.waitForDelivery { $0.payloads.contains { $0.contains(#""secureId":"\#(secureID)""#) } }
        )
        #expect(pushed.tags == "username:alice")
        #expect(!pushed.payloads.contains { $0.contains("4711") }, "the secure payload never goes through the hub")
        let fetched = try await HTTP.call("GET", base + "/api/notifications/\(secureID)", auth: alice)
        #expect(fetched.status == 200)
        #expect(fetched.json?["Payload"] as? String == "Your account code is 4711")

        // A secure item a newsroom publishes straight to Kafka: the backend's consumer keeps its payload for
        // the category's audience (alice follows World on her device; bob has no device).
        let newsroom =
            #"{"id":"newsroom-secure-1","headline":"Embargoed: rates cut","category":"World","secure":true,"body":"Details at noon"}"#
        let produced = try await HubcastBinary.run(
            ["produce", "--brokers", harness.broker.bootstrap],
            stdin: newsroom + "\n"
        )
        #expect(produced.status == 0, "\(produced.stderr)")
        // 404 until the backend's consumer has stored it: the device retries, as the README says.
        let kept = try await poll(every: .milliseconds(100), timeout: .seconds(90)) {
            let answer = try await HTTP.call("GET", base + "/api/notifications/newsroom-secure-1", auth: alice)
            return answer.status == 200 ? answer : nil
        }
        #expect(kept?.json?["Payload"] as? String == "Embargoed: rates cut")
        #expect(kept?.json?["Body"] as? String == "Details at noon")
        #expect(
            try await HTTP.call("GET", base + "/api/notifications/newsroom-secure-1", auth: BackendHarness.basic("bob"))
                .status == 404
        )

        // Delete: the hub no longer has the registration.
        #expect(try await HTTP.call("DELETE", base + "/api/register/\(id2)", auth: alice).status == 200)
        #expect(try await harness.hubRegistration(id2).status == 404)
        #expect(try await HTTP.call("DELETE", base + "/api/register/\(id2)", auth: alice).status == 404)
    }

    /// Each hole of the tutorials' backend, tried against ours.
    @Test(arguments: StoreKind.allCases)
    func attacks(store: StoreKind) async throws {
        let harness = try await BackendHarness(store: store)
        defer { harness.stop() }
        let base = try await harness.startBackend(["--no-consumer"])
        let alice = BackendHarness.basic("alice"), bob = BackendHarness.basic("bob")
        let bobHandle = String(repeating: "C0DE", count: 16)

        // The seed accepts password == user name; we check the bcrypt hash.
        let wrong = try await HTTP.call(
            "POST",
            base + "/api/register?handle=\(Self.appleHandle)",
            auth: BackendHarness.basic("alice", "alice")
        )
        #expect(wrong.status == 401)
        #expect(wrong.errorMessage != nil)
        #expect(wrong.headers["www-authenticate"]?.hasPrefix("Basic") == true)
        #expect(
            try await HTTP.call(
                "POST",
                base + "/api/register?handle=\(Self.appleHandle)",
                auth: BackendHarness.basic("mallory", "mallory")
            ).status == 401
        )
        #expect(try await HTTP.call("POST", base + "/api/register?handle=\(Self.appleHandle)").status == 401)

        // Bob's registration.
        let bobsID = try #require(
            try JSONSerialization.jsonObject(
                with: Data(
                    try await HTTP.call("POST", base + "/api/register?handle=\(bobHandle)", auth: bob).body.utf8
                ),
                options: .fragmentsAllowed
            ) as? String
        )
        let bobsBody = #"{"Platform":"apns","Handle":"\#(bobHandle)","Tags":["World"]}"#
        #expect(try await HTTP.call("PUT", base + "/api/register/\(bobsID)", auth: bob, body: bobsBody).status == 200)

        // Alice may neither update nor delete Bob's registration.
        let hijack = try await HTTP.call(
            "PUT",
            base + "/api/register/\(bobsID)",
            auth: alice,
            body: #"{"Platform":"apns","Handle":"\#(Self.appleHandle)","Tags":["World"]}"#
        )
        #expect(hijack.status == 403)
        #expect(try await HTTP.call("DELETE", base + "/api/register/\(bobsID)", auth: alice).status == 403)
        #expect(try await harness.hubRegistration(bobsID).body.contains("username:bob"))

        // Alice may not tag her own device username:bob (she would receive Bob's pushes), nor any non-category tag.
        let alicesID = try #require(
            try JSONSerialization.jsonObject(
                with: Data(
                    try await HTTP.call("POST", base + "/api/register?handle=\(Self.appleHandle)", auth: alice).body
                        .utf8
                ),
                options: .fragmentsAllowed
            ) as? String
        )
        let spoof = try await HTTP.call(
            "PUT",
            base + "/api/register/\(alicesID)",
            auth: alice,
            body: #"{"Platform":"apns","Handle":"\#(Self.appleHandle)","Tags":["World","username:bob"]}"#
        )
        #expect(spoof.status == 403)
        #expect(spoof.errorMessage?.contains("username:bob") == true)
        #expect(
            try await HTTP.call(
                "PUT",
                base + "/api/register/\(alicesID)",
                auth: alice,
                body: #"{"Platform":"apns","Handle":"\#(Self.appleHandle)","Tags":["VIP"]}"#
            ).status == 403
        )
        // Handles are checked per platform.
        #expect(
            try await HTTP.call(
                "PUT",
                base + "/api/register/\(alicesID)",
                auth: alice,
                body: #"{"Platform":"apns","Handle":"not-a-token","Tags":[]}"#
            ).status == 400
        )

        // A non-sender may not notify someone else; notifying oneself is fine.
        let impersonate = try await HTTP.call(
            "POST",
            base + "/api/notifications?to_tag=bob",
            auth: alice,
            body: #""hi Bob""#,
            headers: ["Content-Type: application/json"]
        )
        #expect(impersonate.status == 403)
        #expect(try await HTTP.call("POST", base + "/api/notifications", auth: alice).status == 200)
        #expect(try await HTTP.call("POST", base + "/api/notifications?category=Gossip", auth: alice).status == 400)

        // A payload addressed to Bob is 404 for Alice, exactly as an id that does not exist.
        let forBob = try await HTTP.call(
            "POST",
            base + "/api/notifications?to_tag=bob&secure=true",
            auth: BackendHarness.basic("carol"),
            body: #""for Bob only""#,
            headers: ["Content-Type: application/json"]
        )
        let payloadID = try #require(forBob.json?["id"] as? String)
        let peek = try await HTTP.call("GET", base + "/api/notifications/\(payloadID)", auth: alice)
        let missing = try await HTTP.call("GET", base + "/api/notifications/999999999", auth: alice)
        #expect(peek.status == 404 && missing.status == 404)
        #expect(peek.body == missing.body)
        #expect(
            try await HTTP.call("GET", base + "/api/notifications/\(payloadID)", auth: bob).json?["Payload"] as? String
                == "for Bob only"
        )

        // Bodies: malformed → 400, oversize → 413, both JSON errors.
        let malformed = try await HTTP.call(
            "PUT",
            base + "/api/register/\(alicesID)",
            auth: alice,
            body: #"{"Platform":"apns","#
        )
        #expect(malformed.status == 400)
        #expect(malformed.errorMessage != nil)
        let oversize = try await HTTP.call(
            "PUT",
            base + "/api/register/\(alicesID)",
            auth: alice,
            body: #"{"Platform":"apns","Handle":""# + String(repeating: "A", count: 100_000) + #""}"#
        )
        #expect(oversize.status == 413)
        #expect(oversize.errorMessage != nil)
        // A chunk size that is not hexadecimal is the request's framing, not its size: 400.
        let framing = try await ChildProcess.run(
            "python3",
            ["-c", Self.rawRequest, base, "/api/register/\(alicesID)", alice]
        )
        #expect(framing.stdout.hasPrefix("HTTP/1.1 400"), "\(framing.stdout.prefix(300)) \(framing.stderr)")
        let unknownRoute = try await HTTP.call("GET", base + "/api/nothing", auth: alice)
        #expect(unknownRoute.status == 404 && unknownRoute.errorMessage != nil)
        let patch = try await HTTP.call("PATCH", base + "/api/register/\(alicesID)", auth: alice, body: "{}")
        #expect(
            patch.status == 405 && patch.headers["allow"] == "PUT, DELETE" && patch.errorMessage != nil,
            "\(patch.status) \(patch.headers)"
        )
        let listing = try await HTTP.call("GET", base + "/api/register", auth: alice)
        #expect(listing.status == 405 && listing.headers["allow"] == "POST", "\(listing.status) \(listing.headers)")

        // Guessing: after ten wrong passwords the user is locked out, the right password included.
        var last: HTTP.Answer?
        for attempt in 1...20 {
            last = try await HTTP.call(
                "GET",
                base + "/api/notifications/1",
                auth: BackendHarness.basic("bob", "guess-\(attempt)")
            )
            if attempt == 1 { #expect(last?.status == 401) }
        }
        #expect(last?.status == 429)
        #expect(Int(last?.headers["retry-after"] ?? "") ?? 0 > 0)
        #expect(last?.errorMessage != nil)
        #expect(try await HTTP.call("GET", base + "/api/notifications/\(payloadID)", auth: bob).status == 429)

        // Nothing secret in any log line: passwords, the Authorization header, handles, payloads.
        let logs = harness.logs
        #expect(!logs.isEmpty)
        for secret in [
            "alice-secret-pw", "bob-secret-pw", "carol-secret-pw", "guess-1", Self.appleHandle, bobHandle,
            "for Bob only",
            alice.dropFirst(6).description, bob.dropFirst(6).description, "hi Bob",
        ] {
            #expect(!logs.contains(secret), "a log line contains a secret")
        }
    }
}

/// Several backends on one PostgreSQL database serve the same registrations and payloads.
@Suite struct SharedStoreTests {
    @Test func twoInstancesOnOnePostgreSQL() async throws {
        let harness = try await BackendHarness(store: .postgres)
        defer { harness.stop() }
        let first = try await harness.startBackend(["--no-consumer"])
        let second = try await harness.startBackend(["--no-consumer"])
        let alice = BackendHarness.basic("alice"), bob = BackendHarness.basic("bob")
        let handle = BackendFlowTests.appleHandle

        let created = try await HTTP.call("POST", first + "/api/register?handle=\(handle)", auth: alice)
        let id = try #require(
            try JSONSerialization.jsonObject(with: Data(created.body.utf8), options: .fragmentsAllowed) as? String
        )
        let body = #"{"Platform":"apns","Handle":"\#(handle)","Tags":["Science"]}"#
        #expect(try await HTTP.call("PUT", second + "/api/register/\(id)", auth: alice, body: body).status == 200)
        #expect(try await HTTP.call("PUT", second + "/api/register/\(id)", auth: bob, body: body).status == 403)
        #expect(try await harness.hubRegistration(id).body.contains("Science"))

        let secure = try await HTTP.call(
            "POST",
            second + "/api/notifications?secure=true",
            auth: alice,
            body: #""to myself""#,
            headers: ["Content-Type: application/json"]
        )
        let payloadID = try #require(secure.json?["id"] as? String)
        #expect(
            try await HTTP.call("GET", first + "/api/notifications/\(payloadID)", auth: alice).json?["Payload"]
                as? String == "to myself"
        )
        #expect(try await HTTP.call("GET", first + "/api/notifications/\(payloadID)", auth: bob).status == 404)

        #expect(try await HTTP.call("DELETE", first + "/api/register/\(id)", auth: alice).status == 200)
        #expect(try await HTTP.call("PUT", second + "/api/register/\(id)", auth: alice, body: body).status == 404)
        #expect(try await harness.hubRegistration(id).status == 404)
        #expect(!harness.logs.contains("hasn't been called yet"), "the pool runs before anything leases from it")
    }
}

/// Failed logins are counted in PostgreSQL: wrong passwords alternating between two instances lock
/// the user out at the same 10th failure as one instance would, on both.
@Suite struct SharedLockoutTests {
    /// `--http-port`: the probes and `/metrics` on a port of their own, as `run` has them. Ready
    /// while the store answers, whatever the hub does; requests and failed logins counted.
    @Test func theOperationsPortProbesTheStoreNotTheHubAndCountsRequests() async throws {
        let harness = try await BackendHarness(store: .postgres)
        defer { harness.stop() }
        let port = freeLoopbackPort()
        let api = try await harness.startBackend(["--no-consumer", "--http-port", String(port)])
        let operations = "http://127.0.0.1:\(port)"
        // Ready once the store has answered its first ping, a few milliseconds after start.
        let ready = try await poll(every: .milliseconds(100), timeout: .seconds(60)) {
            try await HTTP.call("GET", operations + "/readyz").status == 200 ? true : nil
        }
        #expect(ready == true, "the backend never became ready with the store up")
        _ = try await HTTP.call("GET", api + "/api/notifications/1", auth: BackendHarness.basic("bob", "a-wrong-guess"))
        _ = try await HTTP.call("GET", api + "/api/notifications/1", auth: BackendHarness.basic("bob"))
        let metrics = try await HTTP.call("GET", operations + "/metrics").body
        #expect(metrics.contains("hubcast_backend_login_failures 1"), "\(metrics)")
        #expect(
            metrics.contains(
                #"hb_requests{http_route="/api/notifications/{id}",http_request_method="GET",http_response_status_code="401"} 1"#
            ),
            "\(metrics)"
        )
        #expect(metrics.contains("hubcast_backend_store_ping_seconds_count"), "\(metrics)")

        // The hub refuses everything: still ready, on both ports (the API's /readyz no longer asks the hub).
        _ = try await ChildProcess.run(
            "curl",
            ["-sf", "-X", "POST", "--data", #"{"status":401}"#, harness.emulatorBase + "_emulator/faults"]
        )
        #expect(try await HTTP.call("GET", operations + "/readyz").status == 200)
        #expect(try await HTTP.call("GET", api + "/readyz").status == 200)

        // The store stops: not ready, saying why; alive all the same.
        harness.postgres?.stop()
        let unready = try await poll(every: .milliseconds(200), timeout: .seconds(60)) {
            let answer = try await HTTP.call("GET", operations + "/readyz")
            return answer.status == 503 ? answer : nil
        }
        let answer = try #require(unready, "/readyz stayed ready with the store stopped")
        #expect(
            (answer.json?["reasons"] as? [String])?.first?.hasPrefix("store: not answering") == true,
            "\(answer.body)"
        )
        #expect(try await HTTP.call("GET", operations + "/healthz").status == 200)
    }

    /// Behind a proxy every client comes from the proxy's address: with it trusted, the per-address
    /// lockout counts the forwarded client, so one guesser does not lock everyone out.
    @Test func behindATrustedProxyTheLockoutCountsTheForwardedClient() async throws {
        let harness = try await BackendHarness(store: .sqlite)
        defer { harness.stop() }
        let api = try await harness.startBackend([
            "--no-consumer", "--trusted-proxies", "127.0.0.1", "--max-failed-logins-per-address", "3",
        ])
        let guesser = ["X-Forwarded-For: 203.0.113.9", "X-Forwarded-Proto: https"]
        var statuses: [Int] = []
        for name in ["alice", "bob", "carol", "alice"] {
            statuses.append(
                try await HTTP.call(
                    "GET",
                    api + "/api/notifications/1",
                    auth: BackendHarness.basic(name, "a-wrong-guess"),
                    headers: guesser
                ).status
            )
        }
        #expect(statuses == [401, 401, 401, 429], "\(statuses)")
        let reader = try await HTTP.call(
            "GET",
            api + "/api/notifications/1",
            auth: BackendHarness.basic("bob"),
            headers: ["X-Forwarded-For: 198.51.100.20", "X-Forwarded-Proto: https"]
        )
        #expect(
            reader.status == 404,
            "another client behind the same proxy is not locked out: \(reader.status) \(reader.body)"
        )
    }

    /// A proxy on the same host relays from loopback: such a request is not a loopback client's.
    /// Basic over plain http then needs what any proxy needs: to be trusted, and to say the
    /// client's connection was TLS. From an untrusted proxy, `X-Forwarded-Proto: https` counts for
    /// nothing.
    @Test func aRelayFromLoopbackNeedsATrustedProxySayingHTTPS() async throws {
        let harness = try await BackendHarness(store: .sqlite)
        defer { harness.stop() }
        let trusting = try await harness.startBackend(["--no-consumer", "--trusted-proxies", "127.0.0.1"])
        let untrusting = try await harness.startBackend(["--no-consumer"])
        func status(_ api: String, _ headers: [String]) async throws -> (Int, String) {
            let answer = try await HTTP.call(
                "GET",
                api + "/api/notifications/1",
                auth: BackendHarness.basic("alice"),
                headers: headers
            )
            return (answer.status, answer.body)
        }
        let relayedTLS = ["X-Forwarded-For: 203.0.113.9", "X-Forwarded-Proto: https"]
        // 404: authenticated (there is no notification 1).
        #expect(try await status(trusting, []).0 == 404, "a loopback client")
        #expect(try await status(trusting, relayedTLS).0 == 404, "a trusted proxy saying https")
        let plain = try await status(trusting, ["X-Forwarded-For: 203.0.113.9", "X-Forwarded-Proto: http"])
        #expect(plain.0 == 401 && plain.1.contains("only over TLS"), "a trusted proxy saying http: \(plain)")
        let silent = try await status(trusting, ["X-Forwarded-For: 203.0.113.9"])
        #expect(silent.0 == 401 && silent.1.contains("only over TLS"), "a trusted proxy saying nothing: \(silent)")
        #expect(try await status(untrusting, []).0 == 404, "a loopback client")
        let untrusted = try await status(untrusting, relayedTLS)
        #expect(
            untrusted.0 == 401 && untrusted.1.contains("only over TLS"),
            "an untrusted proxy's https counts for nothing: \(untrusted)"
        )
    }

    @Test func failedLoginsCountAcrossInstances() async throws {
        let harness = try await BackendHarness(store: .postgres)
        defer { harness.stop() }
        let instances = [
            try await harness.startBackend(["--no-consumer"]), try await harness.startBackend(["--no-consumer"]),
        ]
        var statuses: [Int] = []
        for attempt in 1...11 {
            statuses.append(
                try await HTTP.call(
                    "GET",
                    instances[attempt % 2] + "/api/notifications/1",
                    auth: BackendHarness.basic("bob", "guess-\(attempt)")
                ).status
            )
        }
        #expect(statuses == Array(repeating: 401, count: 10) + [429], "\(statuses)")
        for instance in instances {
            let right = try await HTTP.call("GET", instance + "/api/notifications/1", auth: BackendHarness.basic("bob"))
            #expect(right.status == 429 && Int(right.headers["retry-after"] ?? "") ?? 0 > 0, "\(right.status)")
        }
    }
}

/// An app retrying on a flaky network: one handle registered twenty times at once (through two
/// instances on PostgreSQL) leaves one registration, in the store and at the hub.
@Suite struct RegistrationRaceTests {
    @Test(arguments: [StoreKind.sqlite, .postgres])
    func aHandleRegisteredTwentyTimesAtOnceKeepsOne(store: StoreKind) async throws {
        let harness = try await BackendHarness(store: store)
        defer { harness.stop() }
        let instances =
            store == .postgres
            ? [try await harness.startBackend(["--no-consumer"]), try await harness.startBackend(["--no-consumer"])]
            : [try await harness.startBackend(["--no-consumer"])]
        let alice = BackendHarness.basic("alice"), handle = BackendFlowTests.appleHandle
        let ids = try await withThrowingTaskGroup(of: String.self) { group in
            for n in 0..<20 {
                group.addTask {
                    let created = try await HTTP.call(
                        "POST",
                        instances[n % instances.count] + "/api/register?handle=\(handle)",
                        auth: alice
                    )
                    return try #require(
                        try? JSONSerialization.jsonObject(with: Data(created.body.utf8), options: .fragmentsAllowed)
                            as? String,
                        "\(created.status) \(created.body)"
                    )
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(ids).count == 20)
        let body = #"{"Platform":"apns","Handle":"\#(handle)","Tags":["World"]}"#
        var kept: [String] = []
        for id in ids
        where try await HTTP.call("PUT", instances[0] + "/api/register/\(id)", auth: alice, body: body).status == 200 {
            kept.append(id)
        }
        #expect(kept.count == 1, "\(kept.count) registrations of one handle survived")
        var atHub = 0
        for id in ids where try await harness.hubRegistration(id).status == 200 { atHub += 1 }
        #expect(atHub == 1, "\(atHub) registrations at the hub")
    }
}

/// TLS from certificate and key files: the seeds' Basic calls over https.
@Suite struct BackendTLSTests {
    @Test func basicOverHTTPS() async throws {
        let harness = try await BackendHarness(store: .sqlite)
        defer { harness.stop() }
        let cert = harness.directory.appendingPathComponent("cert.pem").path,
            key = harness.directory.appendingPathComponent("key.pem").path
        let made = try await ChildProcess.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            ]
        )
        #expect(made.status == 0, "\(made.stderr)")
        let base = try await harness.startBackend(["--no-consumer", "--tls-cert-file", cert, "--tls-key-file", key])
        #expect(base.hasPrefix("https://"))
        let answer = try await HTTP.call(
            "POST",
            base + "/api/register?handle=\(BackendFlowTests.appleHandle)",
            auth: BackendHarness.basic("alice"),
            headers: [],
            cacert: cert
        )
        #expect(answer.status == 200)
        #expect(
            try await HTTP.call(
                "POST",
                base + "/api/register?handle=\(BackendFlowTests.appleHandle)",
                auth: BackendHarness.basic("alice", "x"),
                cacert: cert
            ).status == 401
        )
    }
}
