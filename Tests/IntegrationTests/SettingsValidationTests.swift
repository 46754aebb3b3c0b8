import Foundation
import TestSupport
import Testing

/// A malformed setting exits 2 at once, naming it (never 3 after the connect timeout), and what it
/// echoes back is legible: Unicode as typed, control characters escaped.
@Suite struct SettingsValidationTests {
    /// Long enough that reaching the connect check would show as a slow exit 3, not a quick exit 2.
    static let produce = ["produce", "--category", "World", "--headline", "x", "--connect-timeout", "60"]
    static let hub = SendCommandTests.environment(port: 1)

    @Test(arguments: [
        (["--brokers", ""], #"hubcast: --brokers: "" names no broker (expected host:port[,host:port…])"#),
        (["--brokers", " , "], #"hubcast: --brokers: " , " names no broker"#),
        (
            ["--brokers", "127.0.0.1:99999"],
            #"hubcast: --brokers: "127.0.0.1:99999" has a port that is not a number from 1 to 65535"#
        ),
        (
            ["--brokers", "kafka-1:9092,kafka-2:"],
            #"hubcast: --brokers: "kafka-2:" has a port that is not a number from 1 to 65535"#
        ),
        (
            ["--brokers", "kafka\u{1B}[31m:9092"],
            #"hubcast: --brokers: "kafka\u{1B}[31m:9092" has a host name that is not letters"#
        ),
        (
            ["--kafka-property", "bootstrap.servers=:9092"],
            #"hubcast: --kafka-property bootstrap.servers: ":9092" has no host"#
        ),
        (
            ["--kafka-ca-file", "/nonexistent/ca.pem"],
            #"hubcast: --kafka-ca-file: "/nonexistent/ca.pem" is not a readable file"#
        ),
    ])
    func produceRefusesABadKafkaSettingAtOnce(arguments: [String], message: String) async throws {
        let result = try await HubcastBinary.run(Self.produce + arguments)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.hasPrefix(message), "\(result.stderr)")
    }

    @Test func runAndReplayRefuseTheSameSettings() async throws {
        let run = try await HubcastBinary.run(
            ["run", "--brokers", "127.0.0.1:99999", "--connect-timeout", "60"],
            environment: Self.hub
        )
        #expect(run.status == 2)
        #expect(run.stderr.contains(#"--brokers: "127.0.0.1:99999" has a port"#), "\(run.stderr)")
        let replay = try await HubcastBinary.run([
            "replay", "--from", "kafka:news.deadletter", "--dry-run", "--brokers", "",
        ])
        #expect(replay.status == 2)
        #expect(replay.stderr.contains(#"--brokers: "" names no broker"#), "\(replay.stderr)")
        let caFile = try await HubcastBinary.run(
            ["run", "--brokers", "127.0.0.1:1", "--connect-timeout", "60", "--ca-file", "/nonexistent/hub-ca.pem"],
            environment: Self.hub
        )
        #expect(caFile.status == 2)
        #expect(caFile.stderr == "hubcast: --ca-file: \"/nonexistent/hub-ca.pem\" is not a readable file\n")
        let threads = try await HubcastBinary.run(
            ["run", "--brokers", "127.0.0.1:1", "--connect-timeout", "60", "--http-threads", "0"],
            environment: Self.hub
        )
        #expect(threads.status == 2)
        #expect(threads.stderr == "hubcast: --http-threads must be between 1 and 8, got 0\n")
        let threadsVariable = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "x"],
            environment: Self.hub.merging(["HUBCAST_HTTP_THREADS": "two"]) { $1 }
        )
        #expect(threadsVariable.status == 2)
        #expect(threadsVariable.stderr == "hubcast: HUBCAST_HTTP_THREADS: \"two\" is not a whole number\n")
    }

    @Test func hubSettingsAreTrueOrFalseOnly() async throws {
        var maybe = SendCommandTests.environment(port: 1, emulator: false)
        maybe["HUBCAST_CONNECTION_STRING"] =
            (maybe["HUBCAST_CONNECTION_STRING"] ?? "") + ";UseDevelopmentEmulator=maybe"
        let emulator = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "x"],
            environment: maybe
        )
        #expect(emulator.status == 2)
        #expect(
            emulator.stderr.contains(
                #"connection string part UseDevelopmentEmulator must be true or false, got "maybe""#
            ),
            "\(emulator.stderr)"
        )
        #expect(!emulator.stderr.contains(SendCommandTests.key))
        let insecure = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "x"],
            environment: Self.hub.merging(["HUBCAST_INSECURE": "yes please"]) { $1 }
        )
        #expect(insecure.status == 2)
        #expect(insecure.stderr == "hubcast: HUBCAST_INSECURE: \"yes please\" is not true or false\n")
    }

    @Test func echoedValuesShowUnicodeAndEscapeControlCharacters() async throws {
        let hostile = try await HubcastBinary.run(["produce", "--category", "Wor\u{1B}[31mld\nx", "--headline", "x"])
        #expect(hostile.status == 2)
        #expect(
            hostile.stderr.hasPrefix(#"hubcast: --category: "Wor\u{1B}[31mld\nx" is not one of World"#),
            "\(hostile.stderr)"
        )
        #expect(
            !hostile.stderr.contains("\u{1B}") && hostile.stderr.filter { $0 == "\n" }.count == 1,
            "one line, no raw escape"
        )
        let unicode = try await HubcastBinary.run(["produce", "--category", "Météo ニュース", "--headline", "x"])
        #expect(unicode.stderr.hasPrefix(#"hubcast: --category: "Météo ニュース" is not one of"#), "\(unicode.stderr)")
        let env = try await HubcastBinary.run(
            ["produce", "--category", "World", "--headline", "x"],
            environment: ["HUBCAST_CONNECT_TIMEOUT": "\u{202E}10\r"]
        )
        #expect(env.status == 2)
        #expect(env.stderr == "hubcast: HUBCAST_CONNECT_TIMEOUT: \"\\u{202E}10\\r\" is not a whole number\n")
    }
}
