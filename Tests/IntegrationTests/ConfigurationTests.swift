import Foundation
import Testing
import TestSupport

/// Settings on the real binary: flag over environment over config file (JSON or the older lines),
/// errors that name the setting, secrets in a config file never printed, and the README's table of
/// settings in step with every command's `--help`.
@Suite struct ConfigurationTests {
    static let commands = ["run", "replay", "demo", "send", "produce", "emulator", "dev-broker"]
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// Enough for `run` to get past the hub settings to the pipeline's, without reaching any server.
    static let hub = ["HUBCAST_HUB": "h",
                      "HUBCAST_CONNECTION_STRING": "Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=a2V5"]

    struct Setting: Equatable, CustomStringConvertible {
        var fileKey: String
        var flag: String
        var variable: String
        var defaultValue: String
        var commands: [String]
        var description: String { "\(fileKey) \(flag) \(variable) default \(defaultValue) in \(commands)" }
    }

    static func file(_ name: String, _ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hubcast-config-\(UUID().uuidString)-\(name)")
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    /// The settings each command's help names a variable for, as the README's table should list them.
    static func settingsFromHelp() async throws -> [String: Setting] {
        var settings: [String: Setting] = [:]
        for command in commands {
            let help = try await HubcastBinary.run([command, "--help"]).stdout
            let options = help.components(separatedBy: "OPTIONS:").last ?? ""
            for entry in ("\n" + options).components(separatedBy: "\n  -").dropFirst() {
                let text = ("-" + entry).split(whereSeparator: \.isWhitespace).joined(separator: " ")
                guard let flag = text.split(separator: " ").first.map(String.init), flag.hasPrefix("--") else { continue }
                for match in text.matches(of: /HUBCAST_[A-Z0-9_]+/) {
                    let variable = String(match.output)
                    let secret = variable == "HUBCAST_CONNECTION_STRING" || variable == "HUBCAST_SASL_PASSWORD"
                    let defaultText = text.firstMatch(of: try Regex("\\(env \(variable)(?:, [^;)]*)?; default:? ([^)]*)\\)"))
                        .flatMap { $0.output[1].substring.map(String.init) }
                    let fileKey = variable == "HUBCAST_CONFIG" ? "—" : variable.dropFirst("HUBCAST_".count).lowercased().replacingOccurrences(of: "_", with: "-")
                    var setting = settings[variable] ?? Setting(fileKey: fileKey, flag: secret ? "—" : flag, variable: variable,
                                                                defaultValue: secret ? "— (secret)" : defaultText ?? "—", commands: [])
                    if !setting.commands.contains(command) { setting.commands.append(command) }
                    settings[variable] = setting
                }
            }
        }
        return settings
    }

    static func settingsFromReadme() throws -> [String: Setting] {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.components(separatedBy: "\n")
        guard let header = lines.firstIndex(of: "| file key | flag | environment | default | commands |") else { return [:] }
        var settings: [String: Setting] = [:]
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("| ") else { break }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "`", with: "") }
            guard cells.count == 5 else { continue }
            settings[cells[2]] = Setting(fileKey: cells[0], flag: cells[1], variable: cells[2], defaultValue: cells[3],
                                         commands: cells[4].components(separatedBy: ", "))
        }
        return settings
    }

    @Test func theReadmeTableListsEverySettingOfEveryCommandsHelp() async throws {
        let help = try await Self.settingsFromHelp()
        let readme = try Self.settingsFromReadme()
        #expect(help.count > 30, "the help parser found only \(help.count) settings")
        for (variable, setting) in help {
            #expect(readme[variable] == setting, "README: \(readme[variable].map(\.description) ?? "missing"); --help: \(setting)")
        }
        for variable in Set(readme.keys).subtracting(help.keys) {
            #expect(Bool(false), "README lists \(variable), which no command's --help names")
        }
    }

    /// `run` refuses a concurrency out of range and says which value it resolved.
    static func resolvedConcurrency(_ arguments: [String], environment: [String: String] = [:]) async throws -> String {
        let result = try await HubcastBinary.run(["run", "--brokers", "127.0.0.1:1", "--connect-timeout", "60"] + arguments,
                                                 environment: hub.merging(environment) { $1 })
        #expect(result.status == 2, "\(result.stderr)")
        return result.stderr
    }

    @Test func theFlagBeatsTheEnvironmentWhichBeatsTheFile() async throws {
        let json = try Self.file("settings.json", #"{"concurrency": 20001, "log-level": "warning"}"#)
        let lines = try Self.file("settings.conf", "# the older format\nconcurrency = 20004\n")
        defer { try? FileManager.default.removeItem(at: json); try? FileManager.default.removeItem(at: lines) }
        #expect(try await Self.resolvedConcurrency(["--config", json.path]).contains("got 20001"))
        #expect(try await Self.resolvedConcurrency([], environment: ["HUBCAST_CONFIG": json.path]).contains("got 20001"))
        #expect(try await Self.resolvedConcurrency(["--config", json.path], environment: ["HUBCAST_CONCURRENCY": "20002"]).contains("got 20002"))
        #expect(try await Self.resolvedConcurrency(["--config", json.path, "--concurrency", "20003"],
                                                   environment: ["HUBCAST_CONCURRENCY": "20002"]).contains("got 20003"))
        #expect(try await Self.resolvedConcurrency(["--config", lines.path]).contains("got 20004"))
    }

    @Test func aValueOfTheWrongTypeNamesTheSettingAndWhereItCameFrom() async throws {
        let json = try Self.file("settings.json", #"{"concurrency": "7x"}"#)
        let yaml = try Self.file("settings.yaml", "concurrency: 7\n")
        let broken = try Self.file("broken.json", "{not json")
        defer { for url in [json, yaml, broken] { try? FileManager.default.removeItem(at: url) } }
        #expect(try await Self.resolvedConcurrency(["--config", json.path]).contains(#"concurrency in \#(json.path): "7x" is not a whole number"#))
        #expect(try await Self.resolvedConcurrency([], environment: ["HUBCAST_CONCURRENCY": "many"])
            .contains(#"HUBCAST_CONCURRENCY: "many" is not a whole number"#))
        #expect(try await Self.resolvedConcurrency(["--config", yaml.path]).contains("YAML files are not read"))
        #expect(try await Self.resolvedConcurrency(["--config", broken.path]).contains("is not a readable JSON object of settings"))
    }

    @Test func secretsInAConfigFileAreNeverPrinted() async throws {
        let marker = "c2VjcmV0LW1hcmtlcg", passwordMarker = "sasl-secret-marker"
        // Malformed on purpose, so the commands fail while handling it, where an echo would show.
        let config = try Self.file("secrets.json", """
            {"hub": "h", "connection-string": "Endpoint=nonsense;SharedAccessKeyName=k;SharedAccessKey=\(marker)",
             "sasl-username": "u", "sasl-password": "\(passwordMarker)", "security-protocol": "SASL_SSL",
             "brokers": "127.0.0.1:1", "connect-timeout": 1, "log-level": "trace"}
            """)
        defer { try? FileManager.default.removeItem(at: config) }
        let runs = Self.commands.map { [$0, "--help"] } + [
            ["run"], ["send", "--category", "World", "--headline", "x"], ["produce", "--category", "World", "--headline", "x"],
            ["replay", "--from", "kafka:news.deadletter", "--dry-run"], ["run", "--concurrency", "0"],
        ]
        for arguments in runs {
            let result = try await HubcastBinary.run(arguments, environment: ["HUBCAST_CONFIG": config.path], timeout: .seconds(60))
            let output = result.stdout + result.stderr
            #expect(!output.contains(marker) && !output.contains(passwordMarker), "\(arguments) printed a secret: \(output.suffix(1000))")
        }
        // The connection string was read (and refused) from the file: the failure is about it, not a missing one.
        let send = try await HubcastBinary.run(["send", "--category", "World", "--headline", "x"], environment: ["HUBCAST_CONFIG": config.path])
        #expect(send.status == 2 && send.stderr.contains("connection string: Endpoint"), "\(send.stderr)")
    }
}
