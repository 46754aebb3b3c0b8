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
}
