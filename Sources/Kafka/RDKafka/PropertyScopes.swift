import CRdKafka
import Foundation

/// Which librdkafka properties apply to one kind of client only, from librdkafka's own table
/// (`rd_kafka_conf_properties_show`, the `C/P` column), so that the installed version decides.
/// `hubcast run` has consumers and producers, and a property passed through (`--kafka-property`)
/// goes to the kind it is for: given to the other, librdkafka logged a warning at each start that
/// it ignores it (the cooperative assignor that deployments set, twice per instance).
enum PropertyScopes {
    enum Scope: Sendable, Equatable { case consumer, producer }

    /// Properties of one kind of client only, by name; the others (`*`) are in neither.
    static let table: [String: Scope] = parse(librdkafkaTable())

    /// Whether a client of this role takes the property: unknown names go through, for librdkafka
    /// to refuse.
    static func applies(_ key: String, to role: RDKafkaClient.Role) -> Bool {
        switch table[key] {
        case .consumer: role == .consumer
        case .producer: role == .producer
        case nil: true
        }
    }

    /// Lines of `name | C/P | …`: a markdown table, one per section (global, topic).
    static func parse(_ text: String) -> [String: Scope] {
        var scopes: [String: Scope] = [:]
        for line in text.split(separator: "\n") {
            let columns = line.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false)
            guard columns.count == 3 else { continue }
            let name = columns[0].trimmingCharacters(in: .whitespaces)
            // A name in both tables (global and topic) keeps its first row: librdkafka resolves a
            // name to the global property first.
            guard scopes[name] == nil else { continue }
            switch columns[1].trimmingCharacters(in: .whitespaces) {
            case "C": scopes[name] = .consumer
            case "P": scopes[name] = .producer
            default: continue
            }
        }
        return scopes
    }

    private static func librdkafkaTable() -> String {
        var buffer: UnsafeMutablePointer<CChar>?
        var size = 0
        // The stream writes the buffer's address and size through these pointers until it is
        // closed, so they must outlive the call that opens it.
        let opened = withUnsafeMutablePointer(to: &buffer) { bufferAddress in
            withUnsafeMutablePointer(to: &size) { sizeAddress in
                guard let stream = open_memstream(bufferAddress, sizeAddress) else { return false }
                rd_kafka_conf_properties_show(stream)
                fclose(stream)
                return true
            }
        }
        guard opened, let buffer else { return "" }
        defer { free(buffer) }
        return String(cString: buffer)
    }
}
