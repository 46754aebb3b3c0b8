import Foundation
import NotificationHubs

/// Resolves a setting from its flag, then `HUBCAST_<NAME>`, then the config file.
struct Settings {
    let environment: [String: String]
    private let file: [String: String]
    let filePath: String?

    /// Reads the config file named by `--config` or `HUBCAST_CONFIG`: `name = value` lines, `#` comments.
    init(configPath: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws(CLIError) {
        self.environment = environment
        let path = configPath ?? environment["HUBCAST_CONFIG"]
        filePath = path
        guard let path else {
            file = [:]
            return
        }
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
        file = values
    }

    /// `name` is the flag's long name without dashes, e.g. "brokers" ↔ HUBCAST_BROKERS.
    func string(_ flag: String?, _ name: String) -> String? {
        flag ?? environment[Self.environmentName(name)] ?? file[name]
    }

    func string(_ flag: String?, _ name: String, default value: String) -> String {
        string(flag, name) ?? value
    }

    func int(_ flag: Int?, _ name: String, default value: Int, range: ClosedRange<Int>) throws(CLIError) -> Int {
        let resolved: Int
        if let flag {
            resolved = flag
        } else if let text = string(nil, name) {
            guard let parsed = Int(text) else { throw .usage("\(source(of: name)): \(LegibleText.quoted(text)) is not a whole number") }
            resolved = parsed
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
            guard let parsed = Double(text), parsed.isFinite else { throw .usage("\(source(of: name)): \(LegibleText.quoted(text)) is not a number") }
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
        guard let text = string(nil, name) else { return false }
        switch text.lowercased() {
        case "true": return true
        case "false": return false
        default: throw .usage("\(source(of: name)): \(LegibleText.quoted(text)) is not true or false")
        }
    }

    /// A secret: from the environment variable, or from the file a `…-file` setting names; never a flag.
    func secret(environmentName: String, fileFlag: String?, fileName: String) throws(CLIError) -> String? {
        if let path = string(fileFlag, fileName) {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw .usage("--\(fileName): cannot read \(LegibleText.quoted(path))")
            }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return environment[environmentName]
    }

    /// Where a setting came from, for error messages.
    func source(of name: String) -> String {
        environment[Self.environmentName(name)] != nil ? Self.environmentName(name) : "\(name) in \(filePath.map(LegibleText.sanitized) ?? "the config file")"
    }

    static func environmentName(_ name: String) -> String {
        "HUBCAST_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
    }
}
