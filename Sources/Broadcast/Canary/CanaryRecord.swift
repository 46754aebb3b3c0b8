import Foundation

/// A request to send one canary: written to the canary topic by the instance that holds its first
/// partition (every `--canary-every`) or by `hubcast canary --once`, and sent by whichever
/// instance consumes it.
public struct CanaryRequest: Codable, Sendable, Equatable {
    public var id: String
    /// Milliseconds since the epoch.
    public var requestedAtMs: Int64
    /// After this it is not sent any more, and it counts as failed if it was not accepted.
    public var deadlineMs: Int64
    /// Who asked: an instance, or `canary --once` on a host.
    public var by: String
    /// The consumer group meant to send it: another group consuming the same topic leaves it.
    /// nil: any group.
    public var group: String?

    public init(id: String, requestedAtMs: Int64, deadlineMs: Int64, by: String, group: String? = nil) {
        self.id = id
        self.requestedAtMs = requestedAtMs
        self.deadlineMs = deadlineMs
        self.by = by
        self.group = group
    }

    /// A request as hubcast writes them: an id of at most 200 characters, asked for within a
    /// day of `nowMs`, its deadline not before it. Anything else on the topic is left alone.
    func isPlausible(nowMs: Int64) -> Bool {
        let day: Int64 = 86_400_000
        return !id.isEmpty && id.utf8.count <= 200 && requestedAtMs >= nowMs - day && requestedAtMs <= nowMs + day
            && deadlineMs >= requestedAtMs
    }
}

/// What became of one canary: written by the instance that sent it, back to the canary topic
/// (where `canary --once` waits for it) and as a line on its stdout.
public struct CanaryResult: Codable, Sendable, Equatable {
    public enum Outcome: String, Codable, Sendable {
        /// The hub accepted it and its telemetry says a device's platform service took it.
        case verified
        /// The hub accepted it; its telemetry could not say more (a hub below the Standard tier,
        /// or not final by the deadline). `reason` says which.
        case accepted
        /// It did not reach a device: `reason` says why.
        case failed
    }

    public var id: String
    public var outcome: Outcome
    public var reason: String?
    /// Requested to accepted by the hub, in milliseconds.
    public var endToEndMs: Int64?
    /// Devices the platform services took (verified only).
    public var devices: Int?
    public var notificationId: String?
    /// The instance that reports it.
    public var by: String
    public var atMs: Int64

    public init(
        id: String,
        outcome: Outcome,
        reason: String? = nil,
        endToEndMs: Int64? = nil,
        devices: Int? = nil,
        notificationId: String? = nil,
        by: String,
        atMs: Int64
    ) {
        self.id = id
        self.outcome = outcome
        self.reason = reason
        self.endToEndMs = endToEndMs
        self.devices = devices
        self.notificationId = notificationId
        self.by = by
        self.atMs = atMs
    }

    /// Verified or accepted: the path from Kafka to the hub works.
    public var succeeded: Bool { outcome != .failed }
}

/// One message on the canary topic: `{"request": {…}}` or `{"result": {…}}`.
public enum CanaryRecord: Sendable, Equatable, Codable {
    case request(CanaryRequest)
    case result(CanaryResult)

    private enum Key: CodingKey { case request, result }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        if let request = try container.decodeIfPresent(CanaryRequest.self, forKey: .request) {
            self = .request(request)
        } else {
            self = .result(try container.decode(CanaryResult.self, forKey: .result))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        switch self {
        case .request(let request): try container.encode(request, forKey: .request)
        case .result(let result): try container.encode(result, forKey: .result)
        }
    }

    /// Records are a few hundred bytes: anything much larger is not one, and is not parsed.
    static let maxBytes = 4096

    /// The bytes of a Kafka message; nil for anything that is not one of the two.
    public init?(bytes: [UInt8]) {
        guard bytes.count <= Self.maxBytes, let record = try? JSONDecoder().decode(CanaryRecord.self, from: Data(bytes))
        else { return nil }
        self = record
    }

    public var bytes: [UInt8] { Self.encode(self) }

    /// One line of JSON, keys sorted (records, and the stdout lines).
    static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Plain strings and integers: encoding cannot fail.
        return Array((try? encoder.encode(value)) ?? Data())
    }
}
