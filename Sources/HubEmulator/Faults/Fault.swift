/// A fault the emulator injects into message sends (`POST /_emulator/faults` or start-up flags).
public struct Fault: Sendable, Codable, Equatable {
    /// Answer with this status instead of 201.
    public var status: Int?
    /// Probability that the fault fires on a matching send (default 1).
    public var rate: Double?
    /// `Retry-After` seconds on the injected answer.
    public var retryAfter: Int?
    /// Added delay before answering.
    public var latencyMs: Int?
    /// Probability of closing the connection without answering.
    public var dropConnection: Double?
    /// Answer 403 with NH's QuotaExceeded error (its throttling signal).
    public var quotaExceeded: Bool?
    /// Only sends whose tag expression mentions this tag.
    public var tag: String?
    /// Fire at most this many times.
    public var count: Int?
    /// Let this many matching sends through untouched first: a hub that fails part-way through a job.
    public var after: Int?

    public init(
        status: Int? = nil,
        rate: Double? = nil,
        retryAfter: Int? = nil,
        latencyMs: Int? = nil,
        dropConnection: Double? = nil,
        quotaExceeded: Bool? = nil,
        tag: String? = nil,
        count: Int? = nil,
        after: Int? = nil
    ) {
        self.status = status
        self.rate = rate
        self.retryAfter = retryAfter
        self.latencyMs = latencyMs
        self.dropConnection = dropConnection
        self.quotaExceeded = quotaExceeded
        self.tag = tag
        self.count = count
        self.after = after
    }
}
