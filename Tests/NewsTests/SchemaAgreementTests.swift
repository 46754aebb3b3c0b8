import Foundation
import News
import TestSupport
import Testing

/// The Swift validator and a standard JSON-Schema validator must agree on every fixture.
@Suite struct SchemaAgreementTests {
    static let fixtures = Bundle.module.url(forResource: "Fixtures", withExtension: nil)!
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func fixtureFiles() throws -> [URL] {
        try ["valid", "invalid"].flatMap { folder in
            try FileManager.default.contentsOfDirectory(
                at: fixtures.appendingPathComponent(folder),
                includingPropertiesForKeys: nil
            )
            .filter { $0.pathExtension == "json" }
        }.sorted { $0.path < $1.path }
    }

    @Test func everyFixtureIsClassifiedAsItsFolderSays() throws {
        let files = try Self.fixtureFiles()
        #expect(files.count >= 40)
        for file in files {
            let expectedValid = file.deletingLastPathComponent().lastPathComponent == "valid"
            let bytes = [UInt8](try Data(contentsOf: file))
            let result = Result { try NewsItemDecoder().decode(bytes) }
            #expect(((try? result.get()) != nil) == expectedValid, "\(file.lastPathComponent): \(result)")
        }
    }

    @Test func pythonJSONSchemaAgreesWithSwiftOnEveryFixture() throws {
        let files = try Self.fixtureFiles()
        let output = try runPythonValidator(files: files)
        let verdicts = Dictionary(
            uniqueKeysWithValues: output.split(separator: "\n").compactMap { line -> (String, Bool)? in
                let parts = line.split(separator: " ", maxSplits: 1)
                guard parts.count == 2 else { return nil }
                let path = parts[1].split(separator: ":", maxSplits: 1)[0]
                return (String(path), parts[0] == "valid")
            }
        )
        #expect(verdicts.count == files.count, "python printed: \(output)")
        for file in files {
            let swiftValid = (try? NewsItemDecoder().decode([UInt8](try Data(contentsOf: file)))) != nil
            #expect(
                verdicts[file.path] == swiftValid,
                "\(file.lastPathComponent): python \(String(describing: verdicts[file.path])), swift \(swiftValid)"
            )
        }
    }

    /// Runs schemas/validate.py with the first python3 that has `jsonschema` (make setup installs one).
    private func runPythonValidator(files: [URL]) throws -> String {
        let candidates =
            ["/usr/bin/python3", "/usr/local/bin/python3"]
            + (ProcessInfo.processInfo.environment["PATH"] ?? "")
            .split(separator: ":").map { "\($0)/python3" }
        guard
            let python = candidates.first(where: { path in
                FileManager.default.isExecutableFile(atPath: path)
                    && (try? run(path, ["-c", "import jsonschema"])) != nil
            })
        else {
            Issue.record("no python3 with the jsonschema package: run `make setup`")
            return ""
        }
        return try run(
            python,
            [
                Self.repoRoot.appendingPathComponent("schemas/validate.py").path,
                Self.repoRoot.appendingPathComponent("schemas/news-item.schema.json").path,
            ] + files.map(\.path)
        )
    }

    private func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        struct Failed: Error {}
        guard process.reap() == 0 else { throw Failed() }
        return String(decoding: data, as: UTF8.self)
    }
}
