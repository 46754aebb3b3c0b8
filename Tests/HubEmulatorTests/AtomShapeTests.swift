import Foundation
import NotificationHubs
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// The registrations API's answers, read by a namespace-aware XML parser as a client library
/// written against the service reads them: elements, their namespaces and their order as the REST
/// reference shows them (Atom's entry and feed; the description in the Service Bus namespace).
@Suite struct AtomShapeTests {
    static let atom = "http://www.w3.org/2005/Atom"
    static let connect = "http://schemas.microsoft.com/netservices/2010/10/servicebus/connect"
    static let metadata = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"

    /// Every element as `namespace|name` in document order, and the attributes by element.
    final class Outline: NSObject, XMLParserDelegate {
        var elements: [String] = []
        var attributes: [String: [String: String]] = [:]

        func parser(
            _ parser: XMLParser,
            didStartElement name: String,
            namespaceURI: String?,
            qualifiedName: String?,
            attributes: [String: String] = [:]
        ) {
            elements.append("\(namespaceURI ?? "")|\(name)")
            if self.attributes[name] == nil { self.attributes[name] = attributes }
        }

        static func of(_ bytes: [UInt8]) throws -> Outline {
            let outline = Outline()
            let parser = XMLParser(data: Data(bytes))
            parser.shouldProcessNamespaces = true
            parser.delegate = outline
            guard parser.parse() else { throw parser.parserError ?? CocoaError(.coderReadCorrupt) }
            return outline
        }
    }

    static func entry(description: String, fields: [String]) -> [String] {
        ["entry", "id", "title", "published", "updated", "link", "content"].map { "\(atom)|\($0)" }
            + ["\(connect)|\(description)"]
            + (["ETag", "ExpirationTime", "RegistrationId"] + fields).map { "\(connect)|\($0)" }
    }

    @Test func anEntryAsTheServiceWritesIt() async throws {
        let live = try await LiveEmulator()
        let apple = Registration(platform: .apple, handle: "ABCDEF0123", tags: ["World", "Science"])
        let created = try await live.call(
            .post,
            "registrations/?api-version=2015-01",
            headers: [HTTPHeader("Content-Type", "application/atom+xml;type=entry;charset=utf-8")],
            body: apple.atomEntry
        )
        #expect(created.status == 200)
        #expect(created.header("Content-Type") == "application/atom+xml;type=entry;charset=utf-8")
        let etag = try #require(created.header("ETag"))
        #expect(etag.hasPrefix("W/\""))
        let outline = try Outline.of(created.body)
        #expect(
            outline.elements
                == Self.entry(description: "AppleRegistrationDescription", fields: ["Tags", "DeviceToken"])
        )
        #expect(
            outline.attributes["entry"]?["etag"] == etag || outline.attributes["entry"]?["m:etag"] == etag,
            "\(outline.attributes)"
        )
        #expect(outline.attributes["title"]?["type"] == "text")
        #expect(outline.attributes["link"]?["rel"] == "self")
        #expect(outline.attributes["content"]?["type"] == "application/xml")
        let id = try Registration(atomEntry: String(decoding: created.body, as: UTF8.self)).id ?? ""
        #expect(
            outline.attributes["link"]?["href"]?.hasSuffix("/breaking/registrations/\(id)?api-version=2015-01") == true
        )

        var template = Registration(
            platform: .fcmv1,
            handle: "fcm-token",
            tags: ["Sports"],
            template: .init(body: #"{"m":"$(messageParam)"}"#, name: "t")
        )
        template.id = "shape-1"
        let put = try await live.call(
            .put,
            "registrations/shape-1?api-version=2015-01",
            headers: [HTTPHeader("Content-Type", "application/atom+xml;type=entry;charset=utf-8")],
            body: template.atomEntry
        )
        #expect(
            try Outline.of(put.body).elements
                == Self.entry(
                    description: "FcmV1TemplateRegistrationDescription",
                    fields: ["Tags", "FcmV1RegistrationId", "BodyTemplate", "TemplateName"]
                )
        )
        let read = try await live.call(.get, "registrations/shape-1?api-version=2015-01")
        let readElements = try Outline.of(read.body).elements
        #expect(readElements == (try Outline.of(put.body).elements), "a read answers the entry an update answered")
    }

    @Test func feedsAsTheServiceWritesThem() async throws {
        let live = try await LiveEmulator()
        for (n, tag) in ["World", "World", "Sports"].enumerated() {
            let registration = Registration(platform: .apple, handle: "ABCDEF\(n)", tags: [tag])
            _ = try await live.call(
                .post,
                "registrations/?api-version=2015-01",
                headers: [HTTPHeader("Content-Type", "application/atom+xml;type=entry;charset=utf-8")],
                body: registration.atomEntry
            )
        }
        let head = ["feed", "title", "id", "updated", "link"].map { "\(Self.atom)|\($0)" }
        let one = Self.entry(description: "AppleRegistrationDescription", fields: ["Tags", "DeviceToken"])
        for (path, count) in [
            ("registrations/?api-version=2015-01", 3), ("tags/World/registrations?api-version=2015-01", 2),
            ("registrations/?api-version=2015-01&$top=1", 1),
        ] {
            let feed = try await live.call(.get, path)
            #expect(feed.status == 200)
            #expect(feed.header("Content-Type")?.hasPrefix("application/atom+xml") == true)
            let outline = try Outline.of(feed.body)
            #expect(outline.elements == head + Array(repeating: one, count: count).flatMap { $0 }, "\(path)")
        }
    }
}
