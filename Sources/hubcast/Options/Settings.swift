import Configuration
import Foundation
import NotificationHubs
import SystemPackage
import TextFormats

/// Resolves a setting from its flag, then `HUBCAST_<NAME>`, then the config file, through
/// apple/swift-configuration: the flag comes first (swift-argument-parser parsed it), then a
/// `ConfigReader` over the environment and the file. Secrets are read as secrets (redacted by the
/// library wherever it reports a value) and never echoed in a message.
struct Settings {
    /// Settings that are secrets wherever they are set (environment or config file).
    static let secretNames: Set<String> = ["connection-string", "sasl-password"]

    let environment: [String: String]
    let filePath: String?
    private let reader: ConfigReader

    /// The config file named by `--config` or `HUBCAST_CONFIG`: JSON (`{"brokers": "…", "concurrency": 64}`)
    /// when its name ends in `.json`, else `name = value` lines with `#` comments (the older format, still read).
    static func load(
        configPath: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws(CLIError) -> Settings {
        let path = configPath ?? environment["HUBCAST_CONFIG"]
        var providers: [any ConfigProvider] = [Self.hubcastNamed(environment, name: "environment")]
        if let path {
            let lowered = path.lowercased()
            if lowered.hasSuffix(".yaml") || lowered.hasSuffix(".yml") {
                throw .usage(
                    "--config: YAML files are not read; write the same keys as JSON (a .json file) or as `name = value` lines"
                )
            } else if lowered.hasSuffix(".json") {
                do {
                    providers.append(try await FileProvider<JSONSnapshot>(filePath: FilePath(path)))
                } catch {
                    throw .usage("--config: \(LegibleText.quoted(path)) is not a readable JSON object of settings")
                }
            } else {
                providers.append(
                    Self.hubcastNamed(
                        try legacyFile(path).reduce(into: [:]) { $0[environmentName($1.key)] = $1.value },
                        name: "config file"
                    )
                )
            }
        }
        return Settings(environment: environment, filePath: path, reader: ConfigReader(providers: providers))
    }

    /// `HUBCAST_*` variables as keys without the prefix (`HUBCAST_HTTP_PORT` is `http-port`); the
    /// older config files are read the same way, so their text values convert as the environment's do.
    private static func hubcastNamed(_ variables: [String: String], name: String) -> some ConfigProvider {
        EnvironmentVariablesProvider(
            environmentVariables: variables,
            secretsSpecifier: .specific(Set(secretNames.map(environmentName)))
        )
        .prefixKeys(with: "hubcast")
    }

    private static func legacyFile(_ path: String) throws(CLIError) -> [String: String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw .usage("--config: cannot read \(LegibleText.quoted(path))")
        }
        var values: [String: String] = [:]
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let eq = line.firstIndex(of: "=") else {
                throw .usage("--config: \(LegibleText.sanitized(path)):\(number + 1): expected `name = value`")
            }
            let name = line[..<eq].trimmingCharacters(in: .whitespaces)
            values[name] = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
        }
        return values
    }

    private static func key(_ name: String) -> ConfigKey { ConfigKey([name]) }

    /// The setting as text, whatever its type in a JSON file.
    private func text(_ name: String) -> String? {
        let isSecret = Self.secretNames.contains(name)
        return reader.string(forKey: Self.key(name), isSecret: isSecret)
            ?? reader.int(forKey: Self.key(name), isSecret: isSecret).map(String.init)
            ?? reader.bool(forKey: Self.key(name), isSecret: isSecret).map(String.init)
    }

    /// `name` is the flag's long name without dashes, e.g. "brokers" ↔ HUBCAST_BROKERS.
    func string(_ flag: String?, _ name: String) -> String? {
        flag ?? text(name)
    }

    func string(_ flag: String?, _ name: String, default value: String) -> String {
        string(flag, name) ?? value
    }

    /// A repeatable `key=value` setting: the flags, else the comma-separated list in the
    /// environment or the file. `shape` names the expected form in the error for a malformed entry.
    func pairs(
        _ flags: [String],
        _ name: String,
        shape: String
    ) throws(CLIError) -> [(key: String, value: String, entry: String)] {
        let entries = flags.isEmpty ? (text(name)?.split(separator: ",").map(String.init) ?? []) : flags
        var pairs: [(key: String, value: String, entry: String)] = []
        for entry in entries {
            let parts = entry.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw .usage("--\(name): expected \(shape), got \(LegibleText.quoted(entry))")
            }
            pairs.append((parts[0], parts[1], entry))
        }
        return pairs
    }

    func int(_ flag: Int?, _ name: String, default value: Int, range: ClosedRange<Int>) throws(CLIError) -> Int {
        let resolved: Int
        if let flag {
            resolved = flag
        } else if let parsed = reader.int(forKey: Self.key(name)) {
            resolved = parsed
        } else if let text = text(name) {
            throw .usage("\(source(of: name)): \(LegibleText.quoted(text)) is not a whole number")
        } else {
            resolved = value
        }
        guard range.contains(resolved) else {
            throw .usage("--\(name) must be between \(range.lowerBound) and \(range.upperBound), got \(resolved)")
        }
        return resolved
    }

    /// An optional number (nil when set nowhere), checked against `range`.
    func double(_ flag: Double?, _ name: String, range: ClosedRange<Double>) throws(CLIError) -> Double? {
        var resolved = flag
        if resolved == nil, let text = string(nil, name) {
            guard let parsed = Double(text), parsed.isFinite else {
                throw .usage("\(source(of: name)): \(LegibleText.quoted(text)) is not a number")
            }
            resolved = parsed
        }
        if let resolved, !range.contains(resolved) {
            throw .usage("--\(name) must be between \(range.lowerBound) and \(range.upperBound), got \(resolved)")
        }
        return resolved
    }

    /// A true/false setting: the flag if given, else `true` or `false` (any case) from the environment
    /// or the config file; anything else is refused rather than read as false.
    func bool(_ flag: Bool, _ name: String) throws(CLIError) -> Bool {
        if flag { return true }
        if let text = reader.string(forKey: Self.key(name)) {
            switch text.lowercased() {
            case "true": return true
            case "false": return false
            default: throw .usage("\(source(of: name)): \(LegibleText.quoted(text)) is not true or false")
            }
        }
        return reader.bool(forKey: Self.key(name)) ?? false
    }

    /// A secret: from the file a `…-file` setting names, else from `HUBCAST_<NAME>` or the config
    /// file's `name`; never a flag, never echoed.
    func secret(_ name: String, fileFlag: String?, fileName: String) throws(CLIError) -> String? {
        if let path = string(fileFlag, fileName) {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw .usage("--\(fileName): cannot read \(LegibleText.quoted(path))")
            }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return reader.string(forKey: Self.key(name), isSecret: true)
    }

    /// `topic` if Kafka would take it as a topic name; `alternatives` ends the error's list of what else is allowed.
    /// A topic setting that `none` turns off: the topic, or nil for `none` (or when none is set and
    /// `fallback` is nil); a name Kafka would refuse is refused here.
    func topicOrNone(_ value: String?, _ key: String, default fallback: String?) throws(CLIError) -> String? {
        guard let topic = string(value, key) ?? fallback, topic != "none" else { return nil }
        return try Self.topicName(topic, flag: key, or: " nor none")
    }

    static func topicName(_ topic: String, flag: String, or alternatives: String = "") throws(CLIError) -> String {
        let legal = topic.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x5F
                || c == 0x2D
        }
        guard legal, !topic.isEmpty, topic.utf8.count <= 249, topic != ".", topic != ".." else {
            throw .usage(
                "--\(flag): \(LegibleText.quoted(topic)) is not a Kafka topic name (letters, digits, '.', '_', '-'; at most 249)\(alternatives)"
            )
        }
        return topic
    }

    /// Where a setting came from, for error messages.
    func source(of name: String) -> String {
        environment[Self.environmentName(name)] != nil
            ? Self.environmentName(name) : "\(name) in \(filePath.map(LegibleText.sanitized) ?? "the config file")"
    }

    static func environmentName(_ name: String) -> String {
        "HUBCAST_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
    }
}
