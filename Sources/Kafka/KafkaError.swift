import CRdKafka

/// An error from Kafka: librdkafka's code and message, or a configuration problem.
public struct KafkaError: Error, CustomStringConvertible, Sendable, Equatable {
    /// librdkafka's `rd_kafka_resp_err_t` value (negative codes are client-local).
    public let code: Int32
    /// librdkafka's own text for the error, with any context added by hubcast.
    public let message: String
    private let kind: Kind

    private enum Kind: Sendable, Equatable {
        case librdkafka
        case configuration
        case unreachable
        case shutDown
        case wrongState
    }

    /// The error a librdkafka call returned.
    static func rdKafka(_ err: rd_kafka_resp_err_t, context: String? = nil) -> KafkaError {
        let text = String(cString: rd_kafka_err2str(err))
        let name = String(cString: rd_kafka_err2name(err))
        let message = context.map { "\($0): \(text) (\(name))" } ?? "\(text) (\(name))"
        return KafkaError(code: err.rawValue, message: message, kind: .librdkafka)
    }

    /// A librdkafka property or a hubcast Kafka setting is wrong.
    public static func configuration(_ message: String) -> KafkaError {
        KafkaError(code: RD_KAFKA_RESP_ERR__INVALID_ARG.rawValue, message: message, kind: .configuration)
    }

    /// No broker answered within the start-up timeout.
    static func unreachable(_ message: String) -> KafkaError {
        KafkaError(code: RD_KAFKA_RESP_ERR__TRANSPORT.rawValue, message: message, kind: .unreachable)
    }

    /// The client was closed before the operation could finish.
    static let shutDown = KafkaError(
        code: RD_KAFKA_RESP_ERR__DESTROY.rawValue,
        message: "the Kafka client is shut down",
        kind: .shutDown
    )

    /// A consumer call made in a state where it cannot be (a commit before `run`, a pause after the
    /// member left its group, `run` twice).
    static func wrongState(call: String, state: String) -> KafkaError {
        KafkaError(
            code: RD_KAFKA_RESP_ERR__STATE.rawValue,
            message: "the consumer cannot \(call) while \(state)",
            kind: .wrongState
        )
    }

    public var isWrongState: Bool { kind == .wrongState }

    public var isConfigurationError: Bool { kind == .configuration }
    public var isUnreachable: Bool { kind == .unreachable }
    var isQueueFull: Bool { code == RD_KAFKA_RESP_ERR__QUEUE_FULL.rawValue }

    public var description: String { message }
}
