import Foundation
import TestSupport
import Testing

/// The user's documentation checked against the product: the README's "your Kafka and your hub"
/// steps run as written, links stay inside the repository, no internal process is named, and every
/// `hubcast <command> --flag` the docs show is a flag of that command.
@Suite struct DocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// README, CHANGELOG, docs/ and the benchmarks' README: what a user reads.
    static func documents() throws -> [(path: String, text: String)] {
        var paths = ["README.md", "CHANGELOG.md", "benchmarks/README.md"]
        let docs = root.appendingPathComponent("docs")
        let walker = FileManager.default.enumerator(at: docs, includingPropertiesForKeys: nil)
        while let url = walker?.nextObject() as? URL {
            if url.pathExtension == "md" { paths.append(String(url.path.dropFirst(root.path.count + 1))) }
        }
        #expect(paths.count > 10, "docs/ has \(paths.count - 3) pages")
        return try paths.sorted().map { ($0, try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8)) }
    }

    // MARK: The README's steps, run as written

    /// One fenced block of the README and the marker comment just above it, if any.
    struct Block {
        var marker: String?
        var language: String
        var text: String
    }

    static func blocks(ofSection heading: String, in markdown: String) -> [Block] {
        var blocks: [Block] = []
        var inSection = false, current: Block?, marker: String?
        for line in markdown.components(separatedBy: "\n") {
            if current == nil, line.hasPrefix("## ") {
                inSection = line == heading
                continue
            }
            guard inSection else { continue }
            if var block = current {
                if line == "```" {
                    blocks.append(block)
                    current = nil
                } else {
                    block.text += line + "\n"
                    current = block
                }
            } else if line.hasPrefix("```") {
                current = Block(marker: marker, language: String(line.dropFirst(3)), text: "")
                marker = nil
            } else if let match = line.firstMatch(of: /^<!-- docrun: ([a-z-]+) -->$/) {
                marker = String(match.output.1)
            } else if !line.isEmpty {
                marker = nil
            }
        }
        return blocks
    }

    /// The names a shell block assigns (`NAME=value` at the start of a line).
    static func assignedNames(_ shell: String) -> Set<String> {
        Set(
            shell.components(separatedBy: "\n").compactMap {
                $0.firstMatch(of: /^([A-Z_][A-Z0-9_]*)=/).map { String($0.output.1) }
            }
        )
    }

    /// Every `sh` block of "Run it against your Kafka and your hub" is run verbatim, in order, in one
    /// bash, inside network and process namespaces of its own (the README's port 9090 is free, and
    /// whatever the steps leave running ends with the bash; /proc is mounted anew for the process
    /// namespace, without which the Swift runtime, reading another namespace's /proc, crashed
    /// `hubcast produce` 3 times in 40 under load), with the dev
    /// broker and the emulator standing in for the user's Kafka and hub. Two blocks cannot run as
    /// written: the user's values (replaced by the stand-ins' values, under the same names) and the
    /// topic creation with Apache Kafka's tools (not installed here; the topics it names are checked
    /// to be exactly the ones hubcast uses, which the dev broker creates). A device registered with
    /// the README's installation example must then have received the item.
    @Test func theReadmeStepsRunAsWritten() async throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let blocks = Self.blocks(ofSection: "## Run it against your Kafka and your hub", in: readme)
        let values = try #require(blocks.first { $0.marker == "values" }, "no <!-- docrun: values --> block")
        let topics = try #require(
            blocks.first { $0.marker == "cluster-tools" },
            "no <!-- docrun: cluster-tools --> block"
        )
        let installation = try #require(
            blocks.first { $0.language == "json" && $0.text.contains("installationId") },
            "no installation example"
        )
        let steps = blocks.filter { $0.language == "sh" && $0.marker == nil }
        #expect(steps.count >= 4, "only \(steps.count) runnable blocks")

        let standIns: KeyValuePairs<String, String> = [
            "KAFKA_BROKERS": "$broker", "KAFKA_SECURITY": "PLAINTEXT", "KAFKA_SASL_MECHANISM": "PLAIN",
            "KAFKA_USER": "hubcast", "KAFKA_PASSWORD": "unused-on-plaintext",
            "HUB_NAME": "breaking-news", "HUB_CONNECTION_STRING": "$hub",
        ]
        #expect(Self.assignedNames(values.text) == Set(standIns.map(\.key)), "the README's values: \(values.text)")
        let named = Set(
            topics.text.matches(of: /news\.[a-z]+|hubcast\.quota|hubcast\.delivered/).map { String($0.output) }
        )

        let work = FileManager.default.temporaryDirectory.appendingPathComponent("hubcast-docrun-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        try installation.text.write(
            to: work.appendingPathComponent("installation.json"),
            atomically: true,
            encoding: .utf8
        )
        let bin = URL(fileURLWithPath: HubcastBinary.path).deletingLastPathComponent().path
        let script = """
            set -euo pipefail
            ip link set lo up
            export PATH=\(bin):$PATH
            cd \(work.path)
            # The stand-ins: their first stdout lines are the bootstrap address and the full connection string.
            exec 3< <(exec hubcast dev-broker 2> broker.log)
            exec 4< <(exec hubcast emulator --port 8081 2> emulator.log)
            read -r -t 60 broker <&3
            read -r -t 60 hub <&4
            kcat -b "$broker" -L | sed -n 's/^  topic "\\(news\\.[a-z]*\\|hubcast\\.quota\\|hubcast\\.delivered\\)".*/\\1/p' | sort > topics-hubcast-uses
            printf '%s\\n' \(named.sorted().joined(separator: " ")) | sort > topics-the-readme-creates
            diff topics-the-readme-creates topics-hubcast-uses
            python3 - "$hub" installation.json <<'PY'
            \(Self.registerInstallation)
            PY
            \(standIns.map { "\($0.key)=\"\($0.value)\"" }.joined(separator: "\n"))
            \(steps.map(\.text).joined(separator: "\n"))
            curl -fsS http://127.0.0.1:8081/_emulator/deliveries > ../deliveries.json
            """
        let result = try await ChildProcess.run(
            "unshare",
            ["--net", "--pid", "--fork", "--kill-child", "--mount-proc", "bash", "-c", script],
            timeout: .seconds(240)
        )
        let log = { (name: String) in
            (try? String(contentsOf: work.appendingPathComponent(name), encoding: .utf8)) ?? ""
        }
        #expect(
            result.status == 0,
            """
            exit \(result.status)
            stdout: \(result.stdout.suffix(3000))
            stderr: \(result.stderr.suffix(3000))
            hubcast.log: \(log("hubcast-config/hubcast.log").suffix(3000))
            """
        )
        let deliveries = log("deliveries.json")
        #expect(
            deliveries.contains("Breaking World News : hubcast is live"),
            "the registered device got nothing: \(deliveries.prefix(2000))"
        )
        #expect(deliveries.contains("device-0001"), "not the README's installation: \(deliveries.prefix(2000))")
        let metrics = log("hubcast-config/metrics.jsonl").split(separator: "\n")
        #expect(
            metrics.last?.contains(#""final":true"#) == true && metrics.last?.contains(#""sent":1,"#) == true,
            "the last metrics line: \(metrics.last ?? "none")"
        )
    }

    /// Registers the README's installation at the emulator with the full key, as an app backend would.
    static let registerInstallation = #"""
        import base64, hashlib, hmac, json, sys, time, urllib.parse, urllib.request
        parts = dict(p.split("=", 1) for p in sys.argv[1].split(";") if "=" in p)
        endpoint = parts["Endpoint"].replace("sb://", "http://")
        installation = json.load(open(sys.argv[2]))
        installation["pushChannel"] = "ab" * 32
        hub = f"{endpoint.rstrip('/')}/breaking-news"
        url = f"{hub}/installations/{installation['installationId']}?api-version=2020-06"
        uri = urllib.parse.quote(hub.lower(), safe="").lower()
        expiry = str(int(time.time()) + 600)
        sig = base64.b64encode(hmac.new(parts["SharedAccessKey"].encode(), f"{uri}\n{expiry}".encode(), hashlib.sha256).digest())
        token = f"SharedAccessSignature sr={uri}&sig={urllib.parse.quote(sig, safe='')}&se={expiry}&skn={parts['SharedAccessKeyName']}"
        request = urllib.request.Request(url, data=json.dumps(installation).encode(), method="PUT",
                                         headers={"Authorization": token, "Content-Type": "application/json"})
        print("installation registered:", urllib.request.urlopen(request).status)
        """#

    /// A newcomer reads, in order: what it is, the quick start, their own Kafka and hub, and where the
    /// rest is; in at most 250 lines.
    @Test func theReadmeIsShortAndInOrder() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count <= 251, "README.md has \(lines.count - 1) lines")
        let headings = lines.filter { $0.hasPrefix("## ") }.map { String($0.dropFirst(3)) }
        let order = [
            "Quick start", "Run it against your Kafka and your hub", "News items", "Commands", "Operating it",
            "Deploying", "Limitations", "Performance", "Development", "Licence",
        ]
        #expect(headings.filter(order.contains) == order, "README sections: \(headings)")
        #expect(readme.contains("make demo") && readme.contains("make test"), "the quick start's two commands")
    }

    // MARK: Links and words

    /// The target of every Markdown link: a path inside the repository that exists, with a heading
    /// that exists when it names one; never another site.
    @Test func linksStayInsideTheRepositoryAndResolve() throws {
        for (path, text) in try Self.documents() {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().relativePath
            for match in Self.proseOnly(text).matches(of: /\]\(([^)\s]*)\)|<(https?:[^>]*)>/) {
                let target = String(match.output.1 ?? match.output.2 ?? "")
                #expect(
                    !target.contains("://") && !target.hasPrefix("mailto:"),
                    "\(path) links outside the repository: \(target)"
                )
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(
                    String.init
                )
                let file = parts[0].isEmpty ? path : (folder == "." ? parts[0] : folder + "/" + parts[0])
                let resolved = Self.root.appendingPathComponent(file).standardizedFileURL.path
                #expect(
                    resolved.hasPrefix(Self.root.standardizedFileURL.path + "/")
                        || resolved == Self.root.standardizedFileURL.path,
                    "\(path) links outside the repository: \(target)"
                )
                var isFolder: ObjCBool = false
                #expect(
                    FileManager.default.fileExists(atPath: resolved, isDirectory: &isFolder),
                    "\(path): \(target) does not exist"
                )
                if parts.count == 2, !isFolder.boolValue,
                    let linked = try? String(contentsOfFile: resolved, encoding: .utf8)
                {
                    #expect(Self.anchors(linked).contains(parts[1]), "\(path): \(target) names no heading of \(file)")
                }
            }
        }
    }

    /// What users read names no internal process: no issue numbers, no specification or source
    /// material of the project's own, no paths outside the repository; nor does any `--help`.
    @Test func noInternalProcessIsNamed() async throws {
        var texts = try Self.documents()
        for command in [[], ["backend"]] + Self.commands {
            texts.append(
                (
                    "hubcast \(command.joined(separator: " ")) --help",
                    try await HubcastBinary.run(command + ["--help"]).stdout
                )
            )
        }
        for (path, text) in texts {
            for pattern in [
                #/\bSPEC\b/#, #/[Ii]ssues? \d/#, #/(?:^|[\s,;])#\d+\b/#, #/\b[Ss]eeds? \d/#, #/\b[Ss]eeds?'/#,
                #/[Tt]utorial/#, #/shared\/design/#,
            ] {
                for match in text.matches(of: pattern) {
                    let line = text[..<match.range.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
                        .count
                    #expect(Bool(false), "\(path):\(line) names internal process: \(text[match.range])")
                }
            }
        }
    }

    // MARK: Flags the docs show

    static let commands: [[String]] = [
        ["run"], ["replay"], ["demo"], ["send"], ["produce"], ["canary"], ["outcome"], ["cancel-scheduled"],
        ["emulator"],
        ["dev-broker"],
        ["backend", "serve"], ["backend", "add-user"],
    ]

    /// Every `hubcast <command> … --flag` in a code block or span, and every `--flag` on a command's
    /// own page, is a flag of that command's `--help`.
    @Test func everyFlagTheDocsShowExists() async throws {
        var flags: [String: Set<String>] = [:]
        for command in Self.commands {
            let help = try await HubcastBinary.run(command + ["--help"]).stdout
            flags[command.joined(separator: " ")] = Set(
                help.matches(of: /(?m)^  (?:-[a-z], )?(--[a-z0-9-]+)/).map { String($0.output.1) }
            )
        }
        flags["backend"] = flags["backend serve"]
        var checked = 0
        for (path, text) in try Self.documents() {
            for line in text.components(separatedBy: "\n") {
                for use in line.matches(
                    of:
                        /hubcast (run|replay|demo|send|produce|canary|outcome|cancel-scheduled|emulator|dev-broker|backend add-user|backend)\b([^`|;&>]*)/
                ) {
                    let command = String(use.output.1)
                    for flag in use.output.2.matches(of: /(?:^|[\s=\[])(--[a-z0-9-]+)/) {
                        checked += 1
                        let name = String(flag.output.1)
                        #expect(
                            flags[command]?.contains(name) == true,
                            "\(path): `hubcast \(command)` has no \(name): \(line)"
                        )
                    }
                }
            }
            if path.hasPrefix("docs/commands/") {
                let command = String(path.dropFirst("docs/commands/".count).dropLast(3))
                // The canary's page also covers the flags of `run` that turn it on.
                let own =
                    command == "backend"
                    ? flags["backend serve"]!.union(flags["backend add-user"]!)
                    : command == "canary" ? flags["canary"]!.union(flags["run"]!) : flags[command] ?? []
                for span in Self.proseOnly(text).matches(of: /`(--[a-z0-9-]+)/) {
                    checked += 1
                    #expect(
                        own.contains(String(span.output.1)),
                        "\(path) mentions \(span.output.1), which `hubcast \(command)` does not have"
                    )
                }
            }
        }
        #expect(checked > 100, "only \(checked) flags found in the docs")
    }

    // MARK: Helpers

    /// The text with fenced code blocks blanked (a link or span in code is an example, not a link).
    static func proseOnly(_ markdown: String) -> String {
        var inCode = false
        return markdown.components(separatedBy: "\n").map { line in
            if line.hasPrefix("```") {
                inCode.toggle()
                return ""
            }
            return inCode ? "" : line
        }.joined(separator: "\n")
    }

    /// GitHub's anchors for a file's headings: lower case, punctuation dropped, spaces to hyphens.
    static func anchors(_ markdown: String) -> Set<String> {
        Set(
            proseOnly(markdown).components(separatedBy: "\n").compactMap { line -> String? in
                guard let heading = line.firstMatch(of: /^#{1,6} (.*)$/) else { return nil }
                return String(
                    heading.output.1.lowercased().unicodeScalars.filter {
                        CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == " " || $0 == "_"
                    }.map(Character.init)
                ).replacingOccurrences(of: " ", with: "-")
            }
        )
    }
}
