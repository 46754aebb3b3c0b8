import Foundation
import Synchronization
import TestSupport
import Testing

@testable import NotificationHubs

@Suite struct ConnectionStringTests {
    let key = "S3cretKey+/=abc"

    @Test func parsesInAnyOrderWithWhitespaceAndTrailingSemicolon() throws {
        let c = try ConnectionString(
            parsing:
                " SharedAccessKey=\(key) ; Endpoint=sb://news.servicebus.windows.net/;SharedAccessKeyName=DefaultFullSharedAccessSignature; "
        )
        #expect(c.baseURL == "https://news.servicebus.windows.net/")
        #expect(c.keyName == "DefaultFullSharedAccessSignature")
        #expect(c.key == key)
        #expect(!c.useDevelopmentEmulator)
        #expect(
            c.description
                == "Endpoint=sb://news.servicebus.windows.net/;SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=<redacted>"
        )
    }

    @Test func emulatorUsesPlainHTTPToHostAndPort() throws {
        let c = try ConnectionString(
            parsing:
                "Endpoint=sb://127.0.0.1:8089/;SharedAccessKeyName=Full;SharedAccessKey=k;UseDevelopmentEmulator=true"
        )
        #expect(c.baseURL == "http://127.0.0.1:8089/")
    }

    @Test func useDevelopmentEmulatorIsTrueOrFalseInAnyCase() throws {
        let base = "Endpoint=sb://127.0.0.1:8089/;SharedAccessKeyName=Full;SharedAccessKey=k"
        #expect(try ConnectionString(parsing: base + ";UseDevelopmentEmulator=TRUE").useDevelopmentEmulator)
        #expect(try !ConnectionString(parsing: base + ";usedevelopmentemulator=False").useDevelopmentEmulator)
        #expect(try !ConnectionString(parsing: base).useDevelopmentEmulator)
        for value in ["maybe", "", "yes", "1"] {
            #expect(throws: ConnectionString.ParseError.self) {
                try ConnectionString(parsing: base + ";UseDevelopmentEmulator=" + value)
            }
        }
    }

    @Test(arguments: [
        ("Endpoint=sb://x.servicebus.windows.net/;SharedAccessKey=S3cretKey", "no SharedAccessKeyName part"),
        ("Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=n", "no SharedAccessKey part"),
        ("SharedAccessKeyName=n;SharedAccessKey=S3cretKey", "no Endpoint part"),
        ("Endpoint=ftp://x/;SharedAccessKeyName=n;SharedAccessKey=S3cretKey", "must start with sb://"),
        ("Endpoint=http://x/;SharedAccessKeyName=n;SharedAccessKey=S3cretKey", "only UseDevelopmentEmulator=true"),
        ("Endpoint=sb:///;SharedAccessKeyName=n;SharedAccessKey=S3cretKey", "no valid host"),
        ("garbage S3cretKey", "has no '='"),
        (
            "Endpoint=sb://127.0.0.1:1/;SharedAccessKeyName=n;SharedAccessKey=S3cretKey;UseDevelopmentEmulator=maybe",
            #"connection string part UseDevelopmentEmulator must be true or false, got "maybe""#
        ),
        (
            "Endpoint=sb://x\u{1B}[31m/;SharedAccessKeyName=n;SharedAccessKey=S3cretKey",
            #"Endpoint "sb://x\u{1B}[31m/" has no valid host name"#
        ),
    ])
    func errorsNameThePartAndNeverTheKey(text: String, expected: String) {
        #expect {
            _ = try ConnectionString(parsing: text)
        } throws: { error in
            let description = "\(error)"
            return description.contains(expected) && !description.contains("S3cretKey")
        }
    }
}

@Suite struct SASTokenTests {
    /// Microsoft's Python REST sample, step by step, run by python3 (not pasted output).
    static let pythonSample = """
        import base64, hashlib, hmac, sys, urllib.parse
        uri, key, name, expiry = sys.argv[1:5]
        encoded = urllib.parse.quote(uri, safe="").lower()
        digest = hmac.new(key.encode("utf-8"), (encoded + "\\n" + expiry).encode("utf-8"), hashlib.sha256).digest()
        sig = urllib.parse.quote(base64.b64encode(digest), safe="")
        print(f"SharedAccessSignature sr={encoded}&sig={sig}&se={expiry}&skn={name}", end="")
        """

    @Test(arguments: [
        (
            "https://newsroom.servicebus.windows.net/breaking", "DefaultFullSharedAccessSignature",
            "dGhpcyBpcyBub3QgYSByZWFsIGtleQ==", Int64(1_795_000_000)
        ),
        ("https://NewsRoom.servicebus.windows.net/Hub-Ä", "Send", "k+/=ąę", Int64(1)),
        ("http://127.0.0.1:8089/hub", "Full", "emulator-key", Int64(4_102_444_800)),
    ])
    func matchesPythonByteForByte(uri: String, name: String, key: String, expiry: Int64) async throws {
        let python = try await ChildProcess.run("python3", ["-c", Self.pythonSample, uri, key, name, String(expiry)])
        #expect(python.status == 0, "\(python.stderr)")
        let token = SASToken(resourceURI: uri, keyName: name, key: key, expiry: expiry)
        #expect(token.header == python.stdout)
        let fields = try #require(SASToken.parse(token.header))
        #expect(fields.isSigned(by: key))
        #expect(!fields.isSigned(by: key + "x"))
        #expect(fields.expiry == expiry && fields.keyName == name)
    }
}

@Suite struct TokenProviderTests {
    let connection = try! ConnectionString(
        parsing: "Endpoint=sb://n.servicebus.windows.net/;SharedAccessKeyName=Full;SharedAccessKey=k"
    )

    @Test func thousandConcurrentCallersShareOneMint() async {
        let provider = TokenProvider(connection: connection, now: { 1_000_000 })
        let headers = await withTaskGroup(of: String.self) { group in
            for _ in 0..<1000 { group.addTask { provider.token(for: "https://n.servicebus.windows.net/hub").header } }
            return await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(provider.mintCount == 1)
        #expect(headers.count == 1)
    }

    @Test func refreshesAMarginBeforeExpiryAndOnceAfterA401() {
        let now = Mutex<Int64>(1_000_000)
        var config = TokenProvider.Configuration()
        config.ttlSeconds = 1200
        config.refreshMarginSeconds = 120
        let provider = TokenProvider(connection: connection, configuration: config, now: { now.withLock { $0 } })
        let uri = "https://n.servicebus.windows.net/hub"
        let first = provider.token(for: uri)
        #expect(first.expiry == 1_001_200)
        now.withLock { $0 += 1079 }
        #expect(provider.token(for: uri) == first)
        now.withLock { $0 += 1 }
        let second = provider.token(for: uri)
        #expect(second != first)
        #expect(provider.mintCount == 2)
        // Two senders hit 401 with the same token: only the first mints.
        now.withLock { $0 += 1 }
        let third = provider.refresh(for: uri, rejected: second)
        #expect(provider.refresh(for: uri, rejected: second) == third)
        #expect(provider.mintCount == 3)
        // Another hub is another resource, so another token.
        _ = provider.token(for: "https://n.servicebus.windows.net/other")
        #expect(provider.mintCount == 4)
    }
}
