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

    @Test func pythonJSONSchemaAgreesWithSwiftOnEveryFixture() async throws {
        let files = try Self.fixtureFiles()
        let output = try await runPythonValidator(files: files)
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

    /// Runs schemas/validate.py with the first python3 that has `jsonschema` (make setup installs
    /// one), through `ChildProcess`: its output is read and its exit waited for off the
    /// cooperative threads.
    private func runPythonValidator(files: [URL]) async throws -> String {
        let candidates =
            ["/usr/bin/python3", "/usr/local/bin/python3"]
            + (ProcessInfo.processInfo.environment["PATH"] ?? "")
            .split(separator: ":").map { "\($0)/python3" }
        for python in candidates where FileManager.default.isExecutableFile(atPath: python) {
            guard try await ChildProcess.run(python, ["-c", "import jsonschema"]).status == 0 else { continue }
            let result = try await ChildProcess.run(
                python,
                [
                    Self.repoRoot.appendingPathComponent("schemas/validate.py").path,
                    Self.repoRoot.appendingPathComponent("schemas/news-item.schema.json").path,
                ] + files.map(\.path)
            )
            #expect(result.status == 0, "\(result.stderr)")
            return result.stdout
        }
        Issue.record("no python3 with the jsonschema package: run `make setup`")
        return ""
    }
}
