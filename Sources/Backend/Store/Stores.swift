/// A device registration the backend created at the hub for one user (seeds 002/003).
public struct OwnedRegistration: Sendable, Equatable {
    /// The id the client holds (the hub's id when it was first created).
    public var id: String
    /// The user it belongs to: only they may update or delete it.
    public var owner: String
    /// SHA-256 of the PNS handle, hex: enough to find stale registrations of a handle, never the handle itself.
    public var handleHash: String
    /// "apns", "fcmv1" or "wns"; nil until the first PUT.
    public var platform: String?
    /// The tags at the hub, `username:<owner>` included.
    public var tags: [String]
    /// The hub's registration id: differs from `id` once a registration the hub forgot (410) was recreated.
    public var hubID: String

    public init(
        id: String,
        owner: String,
        handleHash: String,
        platform: String? = nil,
        tags: [String] = [],
        hubID: String
    ) {
        self.id = id
        self.owner = owner
        self.handleHash = handleHash
        self.platform = platform
        self.tags = tags
        self.hubID = hubID
    }
}

/// A secure notification's payload (seed 001), kept until it expires.
public struct SecurePayload: Sendable, Equatable {
    public var id: String
    /// User names the item was addressed to; nil when the audience is a tag expression.
    public var users: [String]?
    /// The audience as an NH tag expression when it is not a list of users (a category, an expression).
    public var tagExpression: String?
    /// What `GET /api/notifications/{id}` answers as `Payload`.
    public var payload: String
    /// Extra fields a newsroom item carries (body, url), shown beside the payload.
    public var body: String?
    public var url: String?
    /// Epoch seconds.
    public var expiresAt: Int64

    public init(
        id: String,
        users: [String]?,
        tagExpression: String?,
        payload: String,
        body: String? = nil,
        url: String? = nil,
        expiresAt: Int64
    ) {
        self.id = id
        self.users = users
        self.tagExpression = tagExpression
        self.payload = payload
        self.body = body
        self.url = url
        self.expiresAt = expiresAt
    }
}

/// Who owns which registration. Every implementation serves concurrent requests (and, for
/// PostgreSQL, several backend instances): single statements, but for `replaceRegistrations`.
public protocol RegistrationStore: Sendable {
    func insertRegistration(_ registration: OwnedRegistration) async throws(StoreError)
    /// Stores `registration` as its owner's one registration of its handle, and returns those it
    /// replaced (to be deleted at the hub). However many run at once for one handle, one stays.
    func replaceRegistrations(with registration: OwnedRegistration) async throws(StoreError) -> [OwnedRegistration]
    func registration(id: String) async throws(StoreError) -> OwnedRegistration?
    /// Every registration of one user: their devices' tags decide which payloads they may read.
    func registrations(owner: String) async throws(StoreError) -> [OwnedRegistration]
    /// Replaces platform, tags and hub id of a registration that `owner` owns; false when none matched.
    func updateRegistration(_ registration: OwnedRegistration) async throws(StoreError) -> Bool
    /// Deletes the registration if `owner` owns it; false when none matched.
    func deleteRegistration(id: String, owner: String) async throws(StoreError) -> Bool
}

/// Secure payloads by id, with their audience and expiry.
public protocol PayloadStore: Sendable {
    /// A fresh numeric id: seed 001's client reads `secureId` as an integer.
    func nextPayloadID() async throws(StoreError) -> Int64
    /// Stores the payload unless one with that id exists (the first writer wins); true when stored.
    func insertPayload(_ payload: SecurePayload) async throws(StoreError) -> Bool
    /// The payload if it exists and has not expired at `now` (epoch seconds).
    func payload(id: String, now: Int64) async throws(StoreError) -> SecurePayload?
    /// Removes expired payloads; returns how many.
    func deleteExpiredPayloads(now: Int64) async throws(StoreError) -> Int
}

/// Both stores, as one database holds them; `ping` is readiness.
public protocol BackendStore: RegistrationStore, PayloadStore {
    /// Applies the migrations this version knows and the database has not seen.
    func migrate() async throws(StoreError)
    func ping() async throws(StoreError)
    func close() async
}

/// A database failure, described without the statement's values.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
