import Hummingbird
import HummingbirdTLS
import Logging
import NIOSSL
import ServiceLifecycle

/// The backend's HTTP(S) server: the API's router on Hummingbird, TLS when given a certificate.
public struct BackendServer: Service, CustomStringConvertible {
    // ServiceLifecycle logs a service's description: a short name, not a reflection of its fields.
    public var description: String { "BackendServer" }

    public struct TLSFiles: Sendable {
        public var certificatePath: String
        public var keyPath: String
        public init(certificatePath: String, keyPath: String) {
            self.certificatePath = certificatePath
            self.keyPath = keyPath
        }
    }

    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    let api: BackendAPI
    let host: String
    let port: Int
    let tls: TLSConfiguration?
    let logger: Logger
    let onRunning: @Sendable (Int) async -> Void

    public init(
        api: BackendAPI,
        host: String,
        port: Int,
        tls files: TLSFiles?,
        logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws(Invalid) {
        self.api = api
        self.host = host
        self.port = port
        self.logger = logger
        self.onRunning = onRunning
        if let files {
            do {
                let chain = try NIOSSLCertificate.fromPEMFile(files.certificatePath).map {
                    NIOSSLCertificateSource.certificate($0)
                }
                let key = try NIOSSLPrivateKey(file: files.keyPath, format: .pem)
                tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
            } catch {
                throw Invalid(description: "cannot load the TLS certificate or key")
            }
        } else {
            tls = nil
        }
    }

    public func run() async throws {
        let onRunning = self.onRunning
        let configuration = ApplicationConfiguration(
            address: .hostname(host, port: port),
            serverName: "hubcast-backend"
        )
        // Hummingbird's own request logging stays at its defaults (it never logs URIs at info).
        if let tls {
            let app = Application(
                router: api.router(),
                server: try .tls(.http1(), tlsConfiguration: tls),
                configuration: configuration,
                onServerRunning: { await onRunning($0.localAddress?.port ?? 0) },
                logger: logger
            )
            try await app.run()
        } else {
            let app = Application(
                router: api.router(),
                configuration: configuration,
                onServerRunning: { await onRunning($0.localAddress?.port ?? 0) },
                logger: logger
            )
            try await app.run()
        }
    }
}
