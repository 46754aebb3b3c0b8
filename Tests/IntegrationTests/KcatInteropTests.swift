import Foundation
import Kafka
import News
import TestSupport
import Testing

/// `hubcast dev-broker` and `hubcast produce` against an ordinary Kafka tool, kcat.
@Suite(.serialized) struct KcatInteropTests {
    let broker: DevBrokerProcess

    init() async throws {
        broker = try await DevBrokerProcess(partitions: 3)
    }

    @Test func kcatProducesAndHubcastConsumesInAGroup() async throws {
        let lines = (0..<20).map { #"k\#($0):{"id":"kcat-\#($0)","headline":"From kcat \#($0)","category":"World"}"# }
        let result = try await ChildProcess.run(
            "kcat",
            ["-P", "-b", broker.bootstrap, "-t", "news.world", "-K", ":"],
            stdin: lines.joined(separator: "\n") + "\n"
        )
        #expect(result.status == 0, "\(result.stderr)")

        let config = KafkaTestKit.consumerConfiguration(broker.bootstrap, group: "from-kcat", topics: ["news.world"])
        let consumer = try KafkaConsumer(configuration: config, logger: KafkaTestKit.logger)
        let messages = try await KafkaTestKit.withRunning(consumer) { await KafkaTestKit.take(20, from: $0) }
        #expect(messages.count == 20)
        let categories = try Categories()
        let items = try messages.map { m in
            try NewsItemDecoder().decode(m.value, topicCategory: categories.category(forTopic: m.topic))
        }
        #expect(Set(items.map(\.id)) == Set((0..<20).map { "kcat-\($0)" }))
        #expect(
            Set(messages.compactMap { $0.key.map { String(decoding: $0, as: UTF8.self) } })
                == Set((0..<20).map { "k\($0)" })
        )
    }

    @Test func hubcastProducesAndKcatReadsBackInAGroup() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("produce-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        try """
        {"id":"p-1","headline":"Markets rally","category":"Business"}
        {"id":"p-2","headline":"   ","category":"Business"}
        {"id":"p-3","headline":"Rates held","category":"Business"}

        {"id":"p-4","headline":"Budget passed"}
        """.write(to: file, atomically: true, encoding: .utf8)
        let produced = try await HubcastBinary.run([
            "produce", "--brokers", broker.bootstrap, "--file", file.path, "--category", "Politics",
        ])
        #expect(produced.status == 1, "a rejected line makes the run fail")
        #expect(produced.stdout == "sent 3, rejected 1, failed 0\n")
        #expect(produced.stderr.contains(#"line 2: field "headline" is empty"#), "\(produced.stderr)")

        let business = try await kcatGroupRead(topic: "news.business", group: "read-business", count: 2)
        #expect(
            business.sorted() == [
                #"{"id":"p-1","headline":"Markets rally","category":"Business"}"#,
                #"{"id":"p-3","headline":"Rates held","category":"Business"}"#,
            ]
        )
        let politics = try await kcatGroupRead(topic: "news.politics", group: "read-politics", count: 1)
        #expect(politics == [#"{"id":"p-4","headline":"Budget passed"}"#])
    }

    @Test func produceFromFlagsAndStdin() async throws {
        let one = try await HubcastBinary.run([
            "produce", "--brokers", broker.bootstrap, "--category", "Science", "--headline", "Comet seen", "--id",
            "sci-1",
        ])
        #expect(one.status == 0, "\(one.stderr)")
        #expect(one.stdout == "sent 1, rejected 0, failed 0\n")
        let stdin =
            #"{"id":"s-2","headline":"Probe lands","category":"Science"}"# + "\nnot json\n"
            + #"{"id":"s-3","headline":"x","category":"Weather"}"# + "\n"
        let piped = try await HubcastBinary.run(["produce", "--brokers", broker.bootstrap], stdin: stdin)
        #expect(piped.status == 1)
        #expect(piped.stdout == "sent 1, rejected 2, failed 0\n")
        #expect(piped.stderr.contains("line 2: not valid JSON"))
        #expect(piped.stderr.contains(#"line 3: field "category" is "Weather", which is not one of World, Politics"#))
        let read = try await kcatGroupRead(topic: "news.science", group: "read-science", count: 2)
        #expect(Set(read.compactMap { try? NewsItemDecoder().decode(Array($0.utf8)).id }) == ["sci-1", "s-2"])
    }

    @Test func oversizeItemIsRejectedWithItsSize() async throws {
        let big = #"{"id":"big","headline":"\#(String(repeating: "x", count: 300))","category":"World"}"#
        let result = try await HubcastBinary.run(
            ["produce", "--brokers", broker.bootstrap, "--max-message-bytes", "200"],
            stdin: big + "\n"
        )
        #expect(result.status == 1)
        #expect(result.stderr.contains("line 1: message is \(big.utf8.count) bytes, over the 200-byte limit"))
    }

    /// Reads `count` messages' values with kcat as a member of a consumer group.
    private func kcatGroupRead(topic: String, group: String, count: Int) async throws -> [String] {
        // kcat's balanced consumer has no "exit at end"; -c stops it after `count` messages.
        let result = try await ChildProcess.run(
            "kcat",
            ["-b", broker.bootstrap, "-G", group, "-o", "beginning", "-c", String(count), "-f", "%s\n", topic],
            timeout: .seconds(60)
        )
        #expect(result.status == 0, "kcat: \(result.stderr)")
        return result.stdout.split(separator: "\n").map(String.init)
    }
}

/// Exit codes, settings precedence and the fixed port, through the real binary.
@Suite struct CommandLineTests {
    @Test func unreachableBrokerExitsWithCode3() async throws {
        let result = try await HubcastBinary.run([
            "produce", "--brokers", "127.0.0.1:1", "--connect-timeout", "1", "--category", "World", "--headline", "x",
        ])
        #expect(result.status == 3)
        #expect(result.stderr.contains("hubcast: could not reach Kafka at 127.0.0.1:1"))
    }

    @Test func flagBeatsEnvironmentBeatsConfigFile() async throws {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("hubcast-\(UUID().uuidString).conf")
        defer { try? FileManager.default.removeItem(at: config) }
        try "# test config\nbrokers = 127.0.0.1:3\nconnect-timeout = 1\n".write(
            to: config,
            atomically: true,
            encoding: .utf8
        )
        let args = ["produce", "--config", config.path, "--category", "World", "--headline", "x"]

        let fromFile = try await HubcastBinary.run(args)
        #expect(fromFile.stderr.contains("could not reach Kafka at 127.0.0.1:3"), "\(fromFile.stderr)")
        let fromEnv = try await HubcastBinary.run(args, environment: ["HUBCAST_BROKERS": "127.0.0.1:2"])
        #expect(fromEnv.stderr.contains("could not reach Kafka at 127.0.0.1:2"))
        let fromFlag = try await HubcastBinary.run(
            args + ["--brokers", "127.0.0.1:1"],
            environment: ["HUBCAST_BROKERS": "127.0.0.1:2"]
        )
        #expect(fromFlag.stderr.contains("could not reach Kafka at 127.0.0.1:1"))
    }

    @Test func badSettingsExitWithCode2AndNameTheSetting() async throws {
        let partitions = try await HubcastBinary.run(["dev-broker", "--partitions", "0"])
        #expect(partitions.status == 2)
        #expect(partitions.stderr.contains("--partitions must be between 1 and 1000, got 0"))
        let envTimeout = try await HubcastBinary.run(
            ["produce", "--category", "World", "--headline", "x"],
            environment: ["HUBCAST_CONNECT_TIMEOUT": "soon"]
        )
        #expect(envTimeout.status == 2)
        #expect(envTimeout.stderr.contains(#"HUBCAST_CONNECT_TIMEOUT: "soon" is not a whole number"#))
        let unknown = try await HubcastBinary.run(["produce", "--no-such-flag"])
        #expect(unknown.status == 2)
        let property = try await HubcastBinary.run([
            "produce", "--kafka-property", "nonsense", "--headline", "x", "--category", "World",
        ])
        #expect(property.status == 2)
        #expect(property.stderr.contains("--kafka-property: expected key=value"))
        let category = try await HubcastBinary.run(["produce", "--category", "Weather", "--headline", "x"])
        #expect(category.status == 2)
        #expect(category.stderr.contains(#"--category: "Weather" is not one of"#))
    }

    @Test func saslPasswordNeverAppearsInOutput() async throws {
        let result = try await HubcastBinary.run(
            [
                "produce", "--brokers", "127.0.0.1:1", "--connect-timeout", "1", "--sasl-username", "newsroom",
                "--security-protocol", "SASL_PLAINTEXT",
                "--category", "World", "--headline", "x", "--log-level", "debug",
            ],
            environment: ["HUBCAST_SASL_PASSWORD": "s3cr3t-pa55word"]
        )
        #expect(result.status == 3)
        #expect(!result.stderr.contains("s3cr3t-pa55word"))
        #expect(!result.stdout.contains("s3cr3t-pa55word"))
    }

    @Test func devBrokerServesAFixedPortForBootstrap() async throws {
        let port = freeLoopbackPort()
        let broker = try await DevBrokerProcess(extraArguments: ["--port", String(port)])
        #expect(broker.bootstrap == "127.0.0.1:\(port)")
        let metadata = try await ChildProcess.run("kcat", ["-b", broker.bootstrap, "-L", "-t", "news.deadletter"])
        #expect(metadata.status == 0, "\(metadata.stderr)")
        #expect(metadata.stdout.contains(#"topic "news.deadletter" with 3 partitions"#))
        #expect(broker.stop() == 0, "SIGTERM ends the dev broker cleanly")
    }

    /// `--help` is pinned: a changed flag or help text must change Tests/IntegrationTests/Help too.
    @Test(arguments: [
        "hubcast", "run", "replay", "demo", "send", "produce", "canary", "outcome", "cancel-scheduled", "emulator",
        "dev-broker",
    ])
    func helpMatchesThePinnedText(command: String) async throws {
        let pinned = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Help/\(command).txt"
        )
        let help = try await HubcastBinary.run(command == "hubcast" ? ["--help"] : [command, "--help"])
        #expect(help.status == 0)
        #expect(help.stdout == (try String(contentsOf: pinned, encoding: .utf8)))
        // Every option has help text: no flag line stands alone without a description.
        let lines = help.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (i, line) in lines.enumerated() where line.hasPrefix("  --") {
            let ownText = line.split(separator: " ").count > 2
            let nextIsText = i + 1 < lines.count && lines[i + 1].hasPrefix("                          ")
            #expect(ownText || nextIsText, "\(command): \(line)")
        }
    }
}
