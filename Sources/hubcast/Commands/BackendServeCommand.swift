import ArgumentParser
import Backend
import Foundation
import Health
import Kafka
import Logging
import Metrics
import News
import Newsroom
import NotificationHubs
import OperationsEndpoint
import ServiceLifecycle
import Telemetry
import TextFormats

/// `hubcast backend [serve]`: the HTTP API, its store, and the consumer that keeps secure payloads.
struct BackendServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the backend API (the default subcommand).",
        discussion: """
            Prints its URL on the first stdout line once it listens. Every /api call needs Authorization: Basic \
            (users file, bcrypt) or Bearer (JWT). Basic is refused over plain http except from loopback (a request \
            with no X-Forwarded-For or X-Forwarded-Proto: one a local proxy relays is not the proxy's own), from a \
            --trusted-proxies peer that says X-Forwarded-Proto: https, or with --allow-plain-http. With --http-port, \
            /healthz, /readyz (the store answers) and /metrics are served on that port. The store is SQLite (a file) by default, PostgreSQL with --store postgres://…
            """
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var kafka: KafkaOptions
    @OptionGroup var hubOptions: HubOptions
    @OptionGroup var categoryOptions: CategoryOptions
    @OptionGroup var http: HTTPOptions

    @Option(
        name: .long,
        help: ArgumentHelp("Address to listen on (env HUBCAST_BACKEND_HOST; default 127.0.0.1).", valueName: "host")
    )
    var host: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Port to listen on; 0 picks a free one (env HUBCAST_BACKEND_PORT; default 8080).",
            valueName: "port"
        )
    )
    var port: Int?

    @Option(
        name: .long,
        help: ArgumentHelp("Users file of name:bcrypt-hash[:roles] lines (env HUBCAST_USERS_FILE).", valueName: "path")
    )
    var usersFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "SQLite file path, or postgres://user@host:port/database (env HUBCAST_STORE; default hubcast-backend.sqlite). The PostgreSQL password comes from HUBCAST_STORE_PASSWORD or --store-password-file.",
            valueName: "location"
        )
    )
    var store: String?

    @Option(
        name: .long,
        help: ArgumentHelp("File holding the PostgreSQL password (env HUBCAST_STORE_PASSWORD_FILE).", valueName: "path")
    )
    var storePasswordFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "File holding an HS256 secret (≥ 32 bytes) for Bearer JWTs (env HUBCAST_JWT_SECRET_FILE).",
            valueName: "path"
        )
    )
    var jwtSecretFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "JWKS file of the identity provider's public keys for Bearer JWTs (env HUBCAST_JWKS_FILE).",
            valueName: "path"
        )
    )
    var jwksFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Required `iss` of Bearer JWTs (env HUBCAST_JWT_ISSUER).", valueName: "issuer")
    )
    var jwtIssuer: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Required `aud` of Bearer JWTs (env HUBCAST_JWT_AUDIENCE).", valueName: "audience")
    )
    var jwtAudience: String?

    @Option(
        name: .long,
        help: ArgumentHelp("PEM certificate chain: serve https (env HUBCAST_TLS_CERT_FILE).", valueName: "path")
    )
    var tlsCertFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp("PEM private key of --tls-cert-file (env HUBCAST_TLS_KEY_FILE).", valueName: "path")
    )
    var tlsKeyFile: String?

    @Flag(
        name: .long,
        help:
            "Accept Basic over plain http from any address (only behind a TLS-terminating proxy) (env HUBCAST_ALLOW_PLAIN_HTTP)."
    )
    var allowPlainHttp = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Comma-separated addresses or CIDR networks of the proxies in front (an ingress, a load balancer): from them X-Forwarded-For names the client (for the per-address lockout) and X-Forwarded-Proto: https counts as TLS for Basic (env HUBCAST_TRUSTED_PROXIES; default none).",
            valueName: "list"
        )
    )
    var trustedProxies: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Comma-separated tags a client may register (env HUBCAST_ALLOWED_TAGS; default: the categories).",
            valueName: "list"
        )
    )
    var allowedTags: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Category (topic) of the backend's own notifications (env HUBCAST_NOTIFY_CATEGORY; default: the first category).",
            valueName: "name"
        )
    )
    var notifyCategory: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds a secure payload without expiresAt is kept (env HUBCAST_PAYLOAD_TTL; default 604800).",
            valueName: "seconds"
        )
    )
    var payloadTtl: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Largest request body in bytes (env HUBCAST_MAX_BODY_BYTES; default 65536).",
            valueName: "bytes"
        )
    )
    var maxBodyBytes: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Failed logins per user before a lockout (env HUBCAST_MAX_FAILED_LOGINS; default 10).",
            valueName: "n"
        )
    )
    var maxFailedLogins: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Failed logins per client address before a lockout (env HUBCAST_MAX_FAILED_LOGINS_PER_ADDRESS; default 50).",
            valueName: "n"
        )
    )
    var maxFailedLoginsPerAddress: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds a lockout lasts, and the window failures are counted in (env HUBCAST_LOGIN_LOCKOUT; default 300).",
            valueName: "seconds"
        )
    )
    var loginLockout: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds a bcrypt-verified name and password are remembered, as a keyed hash, so each call does not pay bcrypt again; 0 turns it off (env HUBCAST_CREDENTIAL_CACHE_SECONDS; default 300).",
            valueName: "seconds"
        )
    )
    var credentialCacheSeconds: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Consumer group that stores secure payloads published straight to Kafka (env HUBCAST_BACKEND_GROUP; default hubcast-backend).",
            valueName: "group"
        )
    )
    var group: String?

    @Flag(
        name: .long,
        help:
            "Do not consume the category topics (payloads then come only from POST /api/notifications) (env HUBCAST_NO_CONSUMER)."
    )
    var noConsumer = false

    func run() async throws {
        let settings = try await common.settings()
        let logger = try common.bootstrapLogging(settings, label: "hubcast.backend")
        let categories = try categoryOptions.resolve(settings)
        let (hubConfig, transportConfig) = try hubOptions.configuration(settings)
        let kafkaConfig = try kafka.configuration(settings)
        let connectTimeout = try kafka.timeout(settings)
        let endpoint = try http.endpoint(settings, logger: logger)
        let prometheus = PrometheusMetrics()
        // Before any metric is made: they bind to the back end in place when they are created.
        if endpoint != nil { MetricsSystem.bootstrap(prometheus.factory) }

        var apiConfig = BackendAPI.Configuration(allowedTags: categories.names, notifyCategory: categories.names[0])
        apiConfig.categories = categories.names
        if let tags = settings.string(allowedTags, "allowed-tags") {
            apiConfig.allowedTags = tags.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                !$0.isEmpty
            }
            for tag in apiConfig.allowedTags
            where !TagSyntax.isTag(tag) || tag.hasPrefix("username:") || tag.hasPrefix("$") {
                throw CLIError.usage("--allowed-tags: \(LegibleText.quoted(tag)) is not a tag a client may set")
            }
        }
        apiConfig.notifyCategory = settings.string(notifyCategory, "notify-category", default: categories.names[0])
        guard categories.topic(for: apiConfig.notifyCategory) != nil else {
            throw CLIError.usage(
                "--notify-category: \(LegibleText.quoted(apiConfig.notifyCategory)) is not one of \(categories.names.joined(separator: ", "))"
            )
        }
        apiConfig.payloadTTL = Int64(
            try settings.int(payloadTtl, "payload-ttl", default: 7 * 24 * 3600, range: 60...(365 * 24 * 3600))
        )
        apiConfig.maxBodyBytes = try settings.int(
            maxBodyBytes,
            "max-body-bytes",
            default: 64 * 1024,
            range: 1024...(16 * 1024 * 1024)
        )
        apiConfig.allowPlainHTTP = try settings.bool(allowPlainHttp, "allow-plain-http")
        if let proxies = settings.string(trustedProxies, "trusted-proxies") {
            do {
                apiConfig.trustedProxies = try TrustedProxies(parsing: proxies)
            } catch {
                throw CLIError.usage("--trusted-proxies: \(error.description)")
            }
        }
        let tlsFiles = try tls(settings)
        apiConfig.tls = tlsFiles != nil

        let lockout = Double(try settings.int(loginLockout, "login-lockout", default: 300, range: 1...86_400))
        let throttle = LoginThrottle(
            perUser: .init(
                maxFailures: try settings.int(maxFailedLogins, "max-failed-logins", default: 10, range: 1...10_000),
                window: lockout,
                lockout: lockout
            ),
            perAddress: .init(
                maxFailures: try settings.int(
                    maxFailedLoginsPerAddress,
                    "max-failed-logins-per-address",
                    default: 50,
                    range: 1...1_000_000
                ),
                window: lockout,
                lockout: lockout
            )
        )
        let users = try loadUsers(settings)
        let bearer = try await bearerVerifier(settings)
        guard !users.entries.isEmpty || bearer != nil else {
            throw CLIError.usage("--users-file: no users and no JWT keys: nobody could log in")
        }
        let cacheSeconds = try settings.int(
            credentialCacheSeconds,
            "credential-cache-seconds",
            default: 300,
            range: 0...86_400
        )

        let location = settings.string(store, "store", default: "hubcast-backend.sqlite")
        let storePassword = try settings.secret(
            "store-password",
            fileFlag: storePasswordFile,
            fileName: "store-password-file"
        )
        let opened: OpenedStore
        do {
            opened = try await OpenedStore.open(location: location, password: storePassword, logger: logger)
        } catch {
            throw CLIError.unreachable("store: \(LegibleText.sanitized(String(describing: error)))")
        }
        // With PostgreSQL every instance counts failed logins in the same rows.
        let authenticator = Authenticator(
            users: users,
            bearer: bearer,
            failures: opened.failedLogins(throttle, logger: logger),
            cacheSeconds: Double(cacheSeconds)
        )

        let producer: KafkaProducer
        do {
            producer = try KafkaProducer(configuration: KafkaProducerConfiguration(kafka: kafkaConfig), logger: logger)
            try await producer.checkReachable(timeout: connectTimeout)
        } catch {
            await opened.store.close()
            throw CLIError.unreachable("could not reach Kafka: " + LegibleText.sanitized(String(describing: error)))
        }
        let publisher = NewsPublisher(producer: producer, categories: categories)
        do {
            let missing = try await publisher.prepareTopics(timeout: connectTimeout)
            if !missing.isEmpty {
                logger.warning(
                    "Category topics not found in Kafka: notifications to them depend on the broker creating topics",
                    metadata: ["topics": "\(missing.joined(separator: ","))"]
                )
            }
        } catch {
            logger.warning(
                "Could not look the category topics up",
                metadata: ["error": "\(LegibleText.sanitized(String(describing: error)))"]
            )
        }
        let client = HubOptions.client(hubConfig, transportConfig, logger: logger)
        let hub = NotificationHubDevices(client: client)
        let api = BackendAPI(
            configuration: apiConfig,
            store: opened.store,
            hub: hub,
            publisher: publisher,
            authenticator: authenticator,
            logger: logger
        )

        let host = settings.string(self.host, "backend-host", default: "127.0.0.1")
        let port = try settings.int(self.port, "backend-port", default: 8080, range: 0...65535)
        let scheme = tlsFiles == nil ? "http" : "https"
        let server: BackendServer
        do {
            server = try BackendServer(api: api, host: host, port: port, tls: tlsFiles, logger: logger) { bound in
                FileHandle.standardOutput.write(Data("\(scheme)://\(host):\(bound)\n".utf8))
                logger.info("Backend listening", metadata: ["url": "\(scheme)://\(host):\(bound)"])
            }
        } catch {
            await opened.store.close()
            throw CLIError.usage("--tls-cert-file / --tls-key-file: \(error.description)")
        }
        var services: [any Service] = opened.services + [server]
        if !(try settings.bool(noConsumer, "no-consumer")) {
            var consumerConfig = KafkaConsumerConfiguration(
                kafka: kafkaConfig,
                groupID: settings.string(group, "backend-group", default: "hubcast-backend"),
                topics: categories.topics
            )
            consumerConfig.offsetReset = .earliest
            let consumer: KafkaConsumer
            do {
                consumer = try KafkaConsumer(configuration: consumerConfig, logger: logger)
            } catch {
                await opened.store.close()
                throw CLIError.usage("Kafka consumer configuration", error)
            }
            services.append(consumer)
            services.append(
                PayloadKeeper(
                    consumer: consumer,
                    store: opened.store,
                    categories: categories,
                    defaultTTL: apiConfig.payloadTTL,
                    logger: logger
                )
            )
        }
        services.append(PayloadSweeper(store: opened.store, logger: logger))
        if let endpoint {
            var healthConfig = HealthState.Configuration(consumes: false)
            healthConfig.dependencies = ["store"]
            let health = HealthMonitor(configuration: healthConfig)
            let store = opened.store
            services.append(
                PingWatch(
                    latency: Timer(label: "hubcast_backend_store_ping"),
                    ping: {
                        do throws(StoreError) {
                            try await store.ping()
                            return nil
                        } catch {
                            return error.description
                        }
                    },
                    report: health.watching("store")
                )
            )
            services.append(
                OperationsServer(
                    health: health,
                    host: endpoint.host,
                    port: endpoint.port,
                    logger: logger,
                    exposition: prometheus.exposition
                )
            )
        }
        let group = ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        var failure: (any Error)?
        do { try await group.run() } catch { failure = error }
        try? await producer.close()
        // sqlite-nio requires its connection closed before it goes, however the group ended.
        await opened.store.close()
        if let failure { throw failure }
    }

    private func tls(_ settings: Settings) throws(CLIError) -> BackendServer.TLSFiles? {
        let cert = settings.string(tlsCertFile, "tls-cert-file")
        let key = settings.string(tlsKeyFile, "tls-key-file")
        switch (cert, key) {
        case (nil, nil): return nil
        case (let cert?, let key?): return BackendServer.TLSFiles(certificatePath: cert, keyPath: key)
        default: throw .usage("--tls-cert-file and --tls-key-file go together")
        }
    }

    private func loadUsers(_ settings: Settings) throws(CLIError) -> UsersFile {
        guard let path = settings.string(usersFile, "users-file") else { return UsersFile() }
        do {
            return try UsersFile.load(path: path)
        } catch {
            throw .usage("--users-file: \(error.description)")
        }
    }

    private func bearerVerifier(_ settings: Settings) async throws -> BearerVerifier? {
        let secretPath = settings.string(jwtSecretFile, "jwt-secret-file")
        let jwksPath = settings.string(jwksFile, "jwks-file")
        let keys: BearerVerifier.Keys
        switch (secretPath, jwksPath) {
        case (nil, nil):
            return nil
        case (let path?, nil):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIError.usage("--jwt-secret-file: cannot read \(LegibleText.quoted(path))")
            }
            var bytes = Array(data)
            while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
            keys = .hs256(secret: bytes)
        case (nil, let path?):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CLIError.usage("--jwks-file: cannot read \(LegibleText.quoted(path))")
            }
            keys = .jwks(json: String(decoding: data, as: UTF8.self))
        default:
            throw CLIError.usage("--jwt-secret-file and --jwks-file are exclusive: give one key source")
        }
        guard let issuer = settings.string(jwtIssuer, "jwt-issuer"),
            let audience = settings.string(jwtAudience, "jwt-audience")
        else {
            throw CLIError.usage("--jwt-issuer and --jwt-audience are required with JWT keys")
        }
        do {
            return try await BearerVerifier.make(keys: keys, configuration: .init(issuer: issuer, audience: audience))
        } catch {
            throw CLIError.usage("JWT keys: \(error.description)")
        }
    }
}
