import Logging
import NotificationHubs
import TestSupport
import Testing

/// Certificate verification against a real TLS server (nginx with a self-signed certificate).
@Suite struct TLSTests {
    @Test func selfSignedServerFailsByDefaultAndWorksWithItsCAFile() async throws {
        let nginx = try await NginxProcess(tls: true)
        defer { nginx.stop() }
        let request = HTTPRequest(
            method: .post,
            url: nginx.url + "hub/messages/",
            body: Array("{}".utf8),
            timeout: .seconds(10)
        )
        let logger = Logger(label: "hubcast.tests")

        do {
            _ = try await CurlTransport(logger: logger).send(request)
            Issue.record("a self-signed certificate was accepted without a CA file")
        } catch {
            #expect(error.kind == .tls, "\(error)")
        }
        let trusted = try await CurlTransport(
            configuration: TransportConfiguration(caFile: nginx.certificate),
            logger: logger
        ).send(request)
        #expect(trusted.status == 201)
        let insecure = try await CurlTransport(configuration: TransportConfiguration(insecure: true), logger: logger)
            .send(request)
        #expect(insecure.status == 201)
    }

    /// The hub offers HTTP/2; the transport speaks HTTP/1.1 to it. Over the system's libcurl a
    /// stream that the server resets after its answer (as nginx does to a request body it did not
    /// read) ends in an error although the answer came, and the send would be made a second time.
    @Test func speaksHTTP1ToAServerOfferingHTTP2AndEveryAnswerArrives() async throws {
        let nginx = try await NginxProcess(tls: true, offersHTTP2: true)
        defer { nginx.stop() }
        let transport = CurlTransport(
            configuration: TransportConfiguration(caFile: nginx.certificate),
            logger: Logger(label: "hubcast.tests")
        )
        defer { transport.shutdown() }
        let request = HTTPRequest(
            method: .post,
            url: nginx.url + "hub/messages/",
            body: Array(String(repeating: "{\"headline\":\"Earthquake\"}", count: 8).utf8),
            timeout: .seconds(30)
        )
        let requests = 2_000
        let statuses = await withTaskGroup(of: String.self) { group in
            for _ in 0..<requests {
                group.addTask {
                    do { return "\(try await transport.send(request).status)" } catch { return "\(error)" }
                }
            }
            return await group.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
        }
        #expect(statuses == ["201": requests])
        let log = try nginx.stopAndReadAccessLog()
        #expect(log.count == requests)
        #expect(Set(log) == ["HTTP/1.1 201"])
    }
}
