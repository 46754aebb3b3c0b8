/// A device registration as NH's Atom XML describes it: native or template, for APNs, FCM v1,
/// WNS or a browser's web push subscription.
public struct Registration: Sendable, Equatable {
    public enum Platform: String, Sendable, CaseIterable {
        case apple, fcmv1, windows, browser

        var handleElement: String {
            switch self {
            case .apple: "DeviceToken"
            case .fcmv1: "FcmV1RegistrationId"
            case .windows: "ChannelUri"
            case .browser: "Endpoint"
            }
        }

        var descriptionPrefix: String {
            switch self {
            case .apple: "Apple"
            case .fcmv1: "FcmV1"
            case .windows: "Windows"
            case .browser: "Browser"
            }
        }
    }

    /// A browser subscription's keys, beside its endpoint (the handle): what web push encrypts with.
    public struct BrowserKeys: Sendable, Equatable {
        public var p256dh: String
        public var auth: String
        public init(p256dh: String, auth: String) {
            self.p256dh = p256dh
            self.auth = auth
        }
    }

    /// A template registration's body and name (seed 000: `simpleAPNSTemplate`).
    public struct Template: Sendable, Equatable {
        public var body: String
        public var name: String?
        public var expiry: String?
        public init(body: String, name: String? = nil, expiry: String? = nil) {
            self.body = body
            self.name = name
            self.expiry = expiry
        }
    }

    public var id: String?
    public var platform: Platform
    /// The PNS handle: APNs device token, FCM registration token, WNS channel URI or a browser's
    /// push endpoint.
    public var handle: String
    public var tags: [String]
    /// nil for a native registration.
    public var template: Template?
    /// A browser registration's keys; nil for the other platforms.
    public var browserKeys: BrowserKeys?

    public init(
        id: String? = nil,
        platform: Platform,
        handle: String,
        tags: [String],
        template: Template? = nil,
        browserKeys: BrowserKeys? = nil
    ) {
        self.id = id
        self.platform = platform
        self.handle = handle
        self.tags = tags
        self.template = template
        self.browserKeys = browserKeys
    }

    /// `AppleTemplateRegistrationDescription` and its siblings.
    public var descriptionElement: String {
        platform.descriptionPrefix + (template == nil ? "" : "Template") + "RegistrationDescription"
    }

    /// The Atom entry NH takes in `PUT /{hub}/registrations/{id}` and `POST /{hub}/registrations`.
    public var atomEntry: String {
        #"<?xml version="1.0" encoding="utf-8"?><entry xmlns="http://www.w3.org/2005/Atom">"#
            + content(serviceFields: "") + "</entry>"
    }

    /// What the service writes around a registration it answers with.
    public struct Answered: Sendable {
        public var etag: Int
        /// The registration's own URL, its Atom `id` and `self` link.
        public var url: String
        /// RFC 3339, the Atom `published` and `updated`.
        public var updated: String
        public init(etag: Int, url: String, updated: String) {
            self.etag = etag
            self.url = url
            self.updated = updated
        }
    }

    /// The entry as the service answers it (Read, Create, Update and the feeds): the Atom `id`,
    /// `title`, `published`, `updated` and `self` link before the content, the version as `m:etag`
    /// and as the description's first element, then `ExpirationTime`, in the reference's order.
    public func atomEntry(answered a: Answered) -> String {
        let url = XMLText.escape(a.url)
        return """
            <entry xmlns="http://www.w3.org/2005/Atom" xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata" \
            m:etag="W/&quot;\(a.etag)&quot;"><id>\(url)</id><title type="text">\(XMLText.escape(id ?? ""))</title>\
            <published>\(a.updated)</published><updated>\(a.updated)</updated><link rel="self" href="\(url)"/>
            """
                + content(
                    serviceFields: "<ETag>\(a.etag)</ETag><ExpirationTime>9999-12-31T23:59:59.9999999Z</ExpirationTime>"
                ) + "</entry>"
    }

    private func content(serviceFields: String) -> String {
        var inner = serviceFields
        if let id { inner += "<RegistrationId>\(XMLText.escape(id))</RegistrationId>" }
        if !tags.isEmpty { inner += "<Tags>\(XMLText.escape(tags.joined(separator: ",")))</Tags>" }
        inner += "<\(platform.handleElement)>\(XMLText.escape(handle))</\(platform.handleElement)>"
        if let keys = browserKeys {
            inner += "<P256DH>\(XMLText.escape(keys.p256dh))</P256DH><Auth>\(XMLText.escape(keys.auth))</Auth>"
        }
        if let template {
            inner +=
                "<BodyTemplate><![CDATA[\(template.body.replacingOccurrences(of: "]]>", with: "]]]]><![CDATA[>"))]]></BodyTemplate>"
            if let expiry = template.expiry { inner += "<Expiry>\(XMLText.escape(expiry))</Expiry>" }
            if let name = template.name { inner += "<TemplateName>\(XMLText.escape(name))</TemplateName>" }
        }
        return """
            <content type="application/xml"><\(descriptionElement) xmlns:i="http://www.w3.org/2001/XMLSchema-instance" \
            xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">\(inner)</\(descriptionElement)></content>
            """
    }

    /// Why an Atom entry is not a registration hubcast understands.
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Reads an Atom entry (or a bare description element) as NH and the SDKs write it.
    public init(atomEntry xml: String) throws(Invalid) {
        let platform: Platform
        let isTemplate: Bool
        if let (p, t) = Platform.allCases.lazy.flatMap({ p in [(p, true), (p, false)] }).first(where: { p, t in
            xml.contains("<\(p.descriptionPrefix)\(t ? "Template" : "")RegistrationDescription")
        }) {
            (platform, isTemplate) = (p, t)
        } else {
            throw Invalid(description: "no Apple, FcmV1, Windows or Browser (template) RegistrationDescription element")
        }
        guard let handle = XMLText.text(of: platform.handleElement, in: xml), !handle.isEmpty else {
            throw Invalid(description: "\(platform.handleElement) is missing")
        }
        var browserKeys: BrowserKeys?
        if platform == .browser {
            guard let p256dh = XMLText.text(of: "P256DH", in: xml), !p256dh.isEmpty,
                let auth = XMLText.text(of: "Auth", in: xml), !auth.isEmpty
            else {
                throw Invalid(description: "a browser registration needs P256DH and Auth beside its Endpoint")
            }
            browserKeys = BrowserKeys(p256dh: p256dh, auth: auth)
        }
        let tags =
            XMLText.text(of: "Tags", in: xml).map {
                $0.split(separator: ",").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
            } ?? []
        var template: Template?
        if isTemplate {
            guard let body = XMLText.text(of: "BodyTemplate", in: xml), !body.isEmpty else {
                throw Invalid(description: "BodyTemplate is missing")
            }
            template = Template(
                body: body,
                name: XMLText.text(of: "TemplateName", in: xml),
                expiry: XMLText.text(of: "Expiry", in: xml)
            )
        }
        self.init(
            id: XMLText.text(of: "RegistrationId", in: xml),
            platform: platform,
            handle: handle,
            tags: tags,
            template: template,
            browserKeys: browserKeys
        )
    }
}
