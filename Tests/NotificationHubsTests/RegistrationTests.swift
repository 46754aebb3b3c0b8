import Foundation
import Logging
import TestSupport
import Testing

@testable import NotificationHubs

@Suite struct RegistrationTests {
    static let seedTemplate = Registration(
        platform: .apple,
        handle: "a1b2c3",
        tags: ["World", "Sports"],
        template: .init(body: #"{"aps":{"alert":"$(messageParam)"}}"#, name: "simpleAPNSTemplate", expiry: "0")
    )

    @Test func atomEntryRoundTrips() throws {
        let xml = Self.seedTemplate.atomEntry
        #expect(xml.contains("<AppleTemplateRegistrationDescription"))
        #expect(xml.contains(#"<BodyTemplate><![CDATA[{"aps":{"alert":"$(messageParam)"}}]]></BodyTemplate>"#))
        #expect(try Registration(atomEntry: xml) == Self.seedTemplate)
        let native = Registration(platform: .fcmv1, handle: "tok&<>", tags: ["username:alice"])
        #expect(try Registration(atomEntry: native.atomEntry) == native)
        #expect(throws: Registration.Invalid.self) { try Registration(atomEntry: "<entry/>") }
    }

    @Test func managementCallsSendWhatNHExpects() async throws {
        let server = try ScriptedHTTPServer { request, _ in
            switch request.requestLine.split(separator: " ")[0] {
            case "POST":
                .init(
                    status: 201,
                    headers: [("Location", "https://x/breaking/registrations/8155-1?api-version=2020-06")]
                )
            case "GET" where request.requestLine.contains("/registrations/"):
                .init(status: 200, body: Self.seedTemplate.atomEntry)
            case "GET":
                .init(
                    status: 200,
                    body: #"{"installationId":"i1","platform":"apns","pushChannel":"c","tags":["World"]}"#
                )
            default: .init(status: 200)
            }
        }
        let connection = try ConnectionString(
            parsing:
                "Endpoint=sb://127.0.0.1:\(server.port)/;SharedAccessKeyName=Full;SharedAccessKey=k;UseDevelopmentEmulator=true"
        )
        let client = NotificationHubClient(
            configuration: .init(connection: connection, hubName: "breaking"),
            transport: CurlTransport(logger: Logger(label: "t")),
            logger: Logger(label: "t")
        )
        let id = try await client.createRegistrationID()
        #expect(id == "8155-1")
        try await client.upsertRegistration(Self.seedTemplate, id: id)
        let fetched = try await client.registration(id: id)
        #expect(
            fetched.template == Self.seedTemplate.template && fetched.tags == ["World", "Sports"] && fetched.id == id
        )
        try await client.deleteRegistration(id: id)
        try await client.upsertInstallation(
            Installation(installationId: "i1", platform: "apns", pushChannel: "c", tags: ["World"])
        )
        try await client.patchInstallation(id: "i1", [InstallationPatch(op: .add, path: "/tags", value: "Sports")])
        #expect(try await client.installation(id: "i1").tags == ["World"])

        let lines = server.requests.map(\.requestLine)
        #expect(
            lines == [
                "POST /breaking/registrationIDs?api-version=2020-06 HTTP/1.1",
                "PUT /breaking/registrations/8155-1?api-version=2020-06 HTTP/1.1",
                "GET /breaking/registrations/8155-1?api-version=2020-06 HTTP/1.1",
                "DELETE /breaking/registrations/8155-1?api-version=2020-06 HTTP/1.1",
                "PUT /breaking/installations/i1?api-version=2020-06 HTTP/1.1",
                "PATCH /breaking/installations/i1?api-version=2020-06 HTTP/1.1",
                "GET /breaking/installations/i1?api-version=2020-06 HTTP/1.1",
            ]
        )
        #expect(server.requests[1].header("Content-Type") == "application/atom+xml;type=entry;charset=utf-8")
        #expect(server.requests[3].header("If-Match") == "*")
        #expect(
            String(decoding: server.requests[5].body, as: UTF8.self)
                == #"[{"op":"add","path":"/tags","value":"Sports"}]"#
        )
        #expect(
            server.requests.allSatisfy { $0.header("Authorization")?.hasPrefix("SharedAccessSignature sr=") == true }
        )
    }
}
