import Foundation
import TestSupport
import Testing

/// Settings on the real binary: flag over environment over config file (JSON or the older lines),
/// errors that name the setting, secrets in a config file never printed, and docs/configuration.md
/// in step with every command's `--help`, both ways.
@Suite struct ConfigurationTests {
    /// Each command as its `--help` is asked for, and the name docs/configuration.md gives it.
    static let commands: [(arguments: [String], name: String)] = [
        (["run"], "run"), (["replay"], "replay"), (["demo"], "demo"), (["send"], "send"), (["produce"], "produce"),
        (["canary"], "canary"), (["outcome"], "outcome"), (["cancel-scheduled"], "cancel-scheduled"),
        (["emulator"], "emulator"), (["dev-broker"], "dev-broker"), (["backend", "serve"], "backend"),
        (["backend", "add-user"], "backend add-user"),
    ]
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    /// Enough for `run` to get past the hub settings to the pipeline's, without reaching any server.
    static let hub = [
        "HUBCAST_HUB": "h",
        "HUBCAST_CONNECTION_STRING":
            "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=a2V5",
    ]
    static let secrets: Set = ["HUBCAST_CONNECTION_STRING", "HUBCAST_SASL_PASSWORD", "HUBCAST_STORE_PASSWORD"]

    struct Setting: Equatable, CustomStringConvertible {
        var fileKey: String
        var flag: String
        var variable: String
        var defaultValue: String
        var status: String
        var commands: [String]
        var description: String { "\(fileKey) \(flag) \(variable) default \(defaultValue) (\(status)) in \(commands)" }
    }

    static func file(_ name: String, _ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hubcast-config-\(UUID().uuidString)-\(name)"
        )
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    /// What each command's help says: the settings (options that name a variable) and, per command,
    /// the flags that name none.
    static func fromHelp() async throws -> (settings: [String: Setting], arguments: [String: Set<String>]) {
        var settings: [String: Setting] = [:], arguments: [String: Set<String>] = [:]
        for command in commands {
            let help = try await HubcastBinary.run(command.arguments + ["--help"]).stdout
            let options = help.components(separatedBy: "OPTIONS:").last ?? ""
            arguments[command.name] = []
            for entry in ("\n" + options).components(separatedBy: "\n  -").dropFirst() {
                let text = ("-" + entry).split(whereSeparator: \.isWhitespace).joined(separator: " ")
                guard let flag = text.split(separator: " ").first.map(String.init), flag.hasPrefix("--") else {
                    continue
                }
                let variables = text.matches(of: /HUBCAST_[A-Z0-9_]+/).map { String($0.output) }
                if variables.isEmpty { arguments[command.name]?.insert(flag) }
                // The help's first word after the flag and its value says whether it still does anything.
                let says = text.firstMatch(of: /^--\S+(?: <[^>]*>)? (\w+)/).map { String($0.output.1) }
                let status = says == "Deprecated" ? "deprecated" : says == "Ignored" ? "ignored" : "live"
                for variable in variables {
                    let secret = secrets.contains(variable)
                    let defaultText = text.firstMatch(
                        of: try Regex("\\(env \(variable)(?:, [^;)]*)?; default:? ([^)]*)\\)")
                    )
                    .flatMap { $0.output[1].substring.map(String.init) }
                    let fileKey =
                        variable == "HUBCAST_CONFIG"
                        ? "—"
                        : variable.dropFirst("HUBCAST_".count).lowercased().replacingOccurrences(of: "_", with: "-")
                    var setting =
                        settings[variable]
                        ?? Setting(
                            fileKey: fileKey,
                            flag: secret ? "—" : flag,
                            variable: variable,
                            defaultValue: secret ? "— (secret)" : defaultText ?? "—",
                            status: status,
                            commands: []
                        )
                    if !setting.commands.contains(command.name) { setting.commands.append(command.name) }
                    settings[variable] = setting
                }
            }
        }
        return (settings, arguments)
    }

    /// The rows of the docs table whose header is `header`, as trimmed cells without backticks.
    static func rows(of header: String) throws -> [[String]] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: header) else { return [] }
        return lines[(start + 2)...].prefix { $0.hasPrefix("| ") }.map { line in
            line.split(separator: "|").map {
                $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "")
            }
        }
    }

    static func settingsFromDocs() throws -> [String: Setting] {
        var settings: [String: Setting] = [:]
        for cells in try rows(of: "| file key | flag | environment | default | status | commands |")
        where cells.count == 6 {
            settings[cells[2]] = Setting(
                fileKey: cells[0],
                flag: cells[1],
                variable: cells[2],
                defaultValue: cells[3],
                status: cells[4],
                commands: cells[5].components(separatedBy: ", ")
            )
        }
        return settings
    }

    static func argumentsFromDocs() throws -> [String: Set<String>] {
        var arguments: [String: Set<String>] = [:]
        for cells in try rows(of: "| command | flags |") where cells.count == 2 {
            arguments[cells[0]] = cells[1] == "—" ? [] : Set(cells[1].components(separatedBy: ", "))
        }
        return arguments
    }

    @Test func theDocsListEverySettingOfEveryCommandsHelpAndNothingElse() async throws {
        let help = try await Self.fromHelp().settings
        let docs = try Self.settingsFromDocs()
        #expect(help.count > 60, "the help parser found only \(help.count) settings")
        for (variable, setting) in help {
            #expect(
                docs[variable] == setting,
                "docs/configuration.md: \(docs[variable].map(\.description) ?? "missing"); --help: \(setting)"
            )
        }
        for variable in Set(docs.keys).subtracting(help.keys) {
            #expect(Bool(false), "docs/configuration.md lists \(variable), which no command's --help names")
        }
    }

    /// Every flag of every command is in the docs (as a setting or an argument), and every flag the
    /// docs give a command is in its help.
    @Test func theDocsListEveryFlagOfEveryCommandAndNoOther() async throws {
        let help = try await Self.fromHelp()
        let documentedSettings = try Self.settingsFromDocs(), documentedArguments = try Self.argumentsFromDocs()
        for command in Self.commands {
            var inHelp = help.arguments[command.name] ?? []
            for setting in help.settings.values where setting.commands.contains(command.name) && setting.flag != "—" {
                inHelp.insert(setting.flag)
            }
            inHelp.remove("--help")
            var inDocs = documentedArguments[command.name] ?? []
            for setting in documentedSettings.values
            where setting.commands.contains(command.name) && setting.flag != "—" { inDocs.insert(setting.flag) }
            #expect(
                inHelp.count > 0 && documentedArguments[command.name] != nil,
                "\(command.name): no row in the arguments table"
            )
            #expect(
                inHelp.subtracting(inDocs).isEmpty,
                "\(command.name): not in docs/configuration.md: \(inHelp.subtracting(inDocs).sorted())"
            )
            #expect(
                inDocs.subtracting(inHelp).isEmpty,
                "\(command.name): documented but not in --help: \(inDocs.subtracting(inHelp).sorted())"
            )
        }
    }

    /// `run` refuses a concurrency out of range and says which value it resolved.
    static func resolvedConcurrency(_ arguments: [String], environment: [String: String] = [:]) async throws -> String {
        let result = try await HubcastBinary.run(
            ["run", "--brokers", "127.0.0.1:1", "--connect-timeout", "60"] + arguments,
            environment: hub.merging(environment) { $1 }
        )
        #expect(result.status == 2, "\(result.stderr)")
        return result.stderr
    }

    @Test func theFlagBeatsTheEnvironmentWhichBeatsTheFile() async throws {
        let json = try Self.file("settings.json", #"{"concurrency": 20001, "log-level": "warning"}"#)
        let lines = try Self.file("settings.conf", "# the older format\nconcurrency = 20004\n")
        defer {
            try? FileManager.default.removeItem(at: json)
            try? FileManager.default.removeItem(at: lines)
        }
        #expect(try await Self.resolvedConcurrency(["--config", json.path]).contains("got 20001"))
        #expect(
            try await Self.resolvedConcurrency([], environment: ["HUBCAST_CONFIG": json.path]).contains("got 20001")
        )
        #expect(
            try await Self.resolvedConcurrency(["--config", json.path], environment: ["HUBCAST_CONCURRENCY": "20002"])
                .contains("got 20002")
        )
        #expect(
            try await Self.resolvedConcurrency(
                ["--config", json.path, "--concurrency", "20003"],
                environment: ["HUBCAST_CONCURRENCY": "20002"]
            ).contains("got 20003")
        )
        #expect(try await Self.resolvedConcurrency(["--config", lines.path]).contains("got 20004"))
    }

    @Test func aValueOfTheWrongTypeNamesTheSettingAndWhereItCameFrom() async throws {
        let json = try Self.file("settings.json", #"{"concurrency": "7x"}"#)
        let yaml = try Self.file("settings.yaml", "concurrency: 7\n")
        let broken = try Self.file("broken.json", "{not json")
        defer { for url in [json, yaml, broken] { try? FileManager.default.removeItem(at: url) } }
        #expect(
            try await Self.resolvedConcurrency(["--config", json.path]).contains(
                #"concurrency in \#(json.path): "7x" is not a whole number"#
            )
        )
        #expect(
            try await Self.resolvedConcurrency([], environment: ["HUBCAST_CONCURRENCY": "many"])
                .contains(#"HUBCAST_CONCURRENCY: "many" is not a whole number"#)
        )
        #expect(try await Self.resolvedConcurrency(["--config", yaml.path]).contains("YAML files are not read"))
        #expect(
            try await Self.resolvedConcurrency(["--config", broken.path]).contains(
                "is not a readable JSON object of settings"
            )
        )
    }

    @Test func secretsInAConfigFileAreNeverPrinted() async throws {
        let marker = "c2VjcmV0LW1hcmtlcg", passwordMarker = "sasl-secret-marker"
        // Malformed on purpose, so the commands fail while handling it, where an echo would show.
        let config = try Self.file(
            "secrets.json",
            """
            {"hub": "h", "connection-string": "Endpoint=nonsense;SharedAccessKeyName=k;SharedAccessKey=\(marker)",
             "sasl-username": "u", "sasl-password": "\(passwordMarker)", "security-protocol": "SASL_SSL",
             "brokers": "127.0.0.1:1", "connect-timeout": 1, "log-level": "trace"}
            """
        )
        defer { try? FileManager.default.removeItem(at: config) }
        let runs =
            Self.commands.map { $0.arguments + ["--help"] } + [
                ["run"], ["send", "--category", "World", "--headline", "x"],
                ["produce", "--category", "World", "--headline", "x"],
                ["replay", "--from", "kafka:news.deadletter", "--dry-run"], ["run", "--concurrency", "0"],
            ]
        for arguments in runs {
            let result = try await HubcastBinary.run(
                arguments,
                environment: ["HUBCAST_CONFIG": config.path],
                timeout: .seconds(60)
            )
            let output = result.stdout + result.stderr
            #expect(
                !output.contains(marker) && !output.contains(passwordMarker),
                "\(arguments) printed a secret: \(output.suffix(1000))"
            )
        }
        // The connection string was read (and refused) from the file: the failure is about it, not a missing one.
        let send = try await HubcastBinary.run(
            ["send", "--category", "World", "--headline", "x"],
            environment: ["HUBCAST_CONFIG": config.path]
        )
        #expect(send.status == 2 && send.stderr.contains("connection string: Endpoint"), "\(send.stderr)")
    }
}
