import InMemoryLogging
import Logging
import Testing

@testable import Kafka

/// Properties passed through to librdkafka go to the kind of client they are for.
@Suite struct PropertyScopesTests {
    @Test func theInstalledLibrdkafkaSaysWhichPropertiesAreForWhichClient() {
        let table = PropertyScopes.table
        #expect(table.count > 50, "\(table.count) properties read")
        #expect(table["partition.assignment.strategy"] == .consumer)
        #expect(table["group.id"] == .consumer)
        #expect(table["auto.offset.reset"] == .consumer)
        #expect(table["linger.ms"] == .producer)
        #expect(table["acks"] == .producer)
        #expect(table["bootstrap.servers"] == nil)
        #expect(PropertyScopes.applies("no.such.property", to: .producer))
    }

    @Test func theTableIsReadByItsFirstTwoColumns() {
        let text = """
            ## Global configuration properties

            Property                  | C/P | Range | Default | Importance | Description
            --------------------------|-----|-------|--------:|------------| -----------
            client.id                 |  *  |       | rdkafka | low        | Client identifier.
            group.id                  |  C  |       |         | high       | Client group id | with a bar.
            linger.ms                 |  P  | 0 .. 9 |      5 | high       | Alias.
            offset.store.method       |  C  |       |  broker | low        | Global row.

            ## Topic configuration properties

            offset.store.method       |  P  |       |  broker | low        | A conflicting topic row.
            """
        let table = PropertyScopes.parse(text)
        #expect(table == ["group.id": .consumer, "linger.ms": .producer, "offset.store.method": .consumer])
    }

    /// The cooperative assignor, as the Kubernetes Deployment sets it, given to `hubcast run`'s
    /// producers too: librdkafka warned at each start that it ignores it there.
    @Test(arguments: [
        (RDKafkaClient.Role.producer, "partition.assignment.strategy", "cooperative-sticky"),
        (RDKafkaClient.Role.consumer, "linger.ms", "20"),
    ])
    func aPropertyOfTheOtherKindOfClientIsNotGivenToIt(role: RDKafkaClient.Role, key: String, value: String) throws {
        let logs = InMemoryLogHandler()
        let logger = Logger(label: "test") { _ in logs }
        var properties = ["bootstrap.servers": "127.0.0.1:9", key: value]
        if role == .consumer { properties["group.id"] = "scopes" }
        let client = try RDKafkaClient(role: role, properties: properties, logger: logger)
        if role == .consumer { client.consumerClose() }
        client.destroy()
        let warned = logs.entries.filter { $0.metadata["facility"] == "CONFWARN" }
            .map { "\($0.message) \($0.metadata)" }
        #expect(warned.isEmpty, "\(warned)")
    }
}
