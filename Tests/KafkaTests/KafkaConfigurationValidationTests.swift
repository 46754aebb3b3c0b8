import Testing

@testable import Kafka

/// Broker lists and file paths that librdkafka would only trip over while connecting.
@Suite struct KafkaConfigurationValidationTests {
    @Test(arguments: [
        "kafka-1:9092", "kafka-1", "PLAINTEXT://kafka-1:9092", "10.0.0.1:65535", "[::1]:9092", "[fe80::1%eth0]:9092",
        "::1", "a_b.c-d:1",
    ])
    func acceptsWhatLibrdkafkaAccepts(entry: String) {
        #expect(KafkaConfiguration.problem(withBroker: entry) == nil)
    }

    @Test(arguments: [
        ("127.0.0.1:99999", "has a port that is not a number from 1 to 65535"),
        ("127.0.0.1:0", "has a port that is not a number from 1 to 65535"),
        ("127.0.0.1:", "has a port that is not a number from 1 to 65535"),
        ("127.0.0.1:9o92", "has a port that is not a number from 1 to 65535"),
        (":9092", "has no host"),
        ("[::1", "has '[' without ']'"),
        ("[::1]9092", "has text after ']' that is not :port"),
        ("kafka 1:9092", "has a host name that is not letters, digits, '.', '-' and '_'"),
    ])
    func refusesWhatWouldOnlyFailAtConnect(entry: String, problem: String) {
        #expect(KafkaConfiguration.problem(withBroker: entry) == problem)
    }

    @Test func emptyListsAndMissingFilesAreRefusedWithTheProperty() {
        #expect { try KafkaConfiguration(bootstrapServers: " , ").validate() } throws: {
            ($0 as? KafkaConfiguration.Invalid)?.property == "bootstrap.servers"
        }
        var config = KafkaConfiguration(bootstrapServers: "kafka-1:9092")
        config.caFile = "/nonexistent/ca.pem"
        #expect { try config.validate() } throws: { ($0 as? KafkaConfiguration.Invalid)?.property == "ssl.ca.location" }
        config.caFile = "probe"
        #expect(throws: Never.self) { try config.validate() }
        config.properties["bootstrap.servers"] = ""
        #expect(throws: KafkaConfiguration.Invalid.self) { try config.validate() }
    }
}
