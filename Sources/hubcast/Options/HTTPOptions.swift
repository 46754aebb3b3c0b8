import ArgumentParser
import Logging

/// The optional HTTP port for orchestrators (`run`, `emulator`, `backend`): /healthz, /readyz, /metrics.
struct HTTPOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve GET /healthz (alive), /readyz (ready) and /metrics (Prometheus) on this port (env HUBCAST_HTTP_PORT; default off).",
            valueName: "port"
        )
    )
    var httpPort: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Address of the --http-port endpoint, 0.0.0.0 in a container (env HUBCAST_HTTP_HOST; default 127.0.0.1).",
            valueName: "host"
        )
    )
    var httpHost: String?

    /// The endpoint's address, when one is asked for. The deprecated names still work (with a
    /// warning) so existing deployments keep their metrics; given with a different value than the
    /// new name, they are a usage error rather than a guess.
    func endpoint(
        _ settings: Settings,
        legacy: LegacyPrometheusOptions? = nil,
        logger: Logger
    ) throws(CLIError) -> (host: String, port: Int)? {
        let port = try settings.int(httpPort, "http-port", default: 0, range: 0...65535)
        let host = settings.string(httpHost, "http-host")
        guard let legacy else { return port == 0 ? nil : (host ?? "127.0.0.1", port) }
        let legacyPort = try settings.int(legacy.prometheusPort, "prometheus-port", default: 0, range: 0...65535)
        let legacyHost = settings.string(legacy.prometheusHost, "prometheus-host")
        if legacyPort != 0 || legacyHost != nil {
            logger.warning(
                "--prometheus-port and --prometheus-host are deprecated: use --http-port and --http-host (the port also serves /healthz and /readyz)"
            )
        }
        if port != 0, legacyPort != 0, port != legacyPort {
            throw .usage(
                "--prometheus-port (deprecated) and --http-port disagree (\(legacyPort) and \(port)); set only --http-port"
            )
        }
        if let host, let legacyHost, host != legacyHost {
            throw .usage("--prometheus-host (deprecated) and --http-host disagree; set only --http-host")
        }
        let resolved = port != 0 ? port : legacyPort
        return resolved == 0 ? nil : (host ?? legacyHost ?? "127.0.0.1", resolved)
    }
}

/// `hubcast run`'s names for the port before it served the probes too; kept for existing deployments.
struct LegacyPrometheusOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Deprecated: use --http-port, which serves /metrics as this did (env HUBCAST_PROMETHEUS_PORT).",
            valueName: "port"
        )
    )
    var prometheusPort: Int?

    @Option(
        name: .long,
        help: ArgumentHelp("Deprecated: use --http-host (env HUBCAST_PROMETHEUS_HOST).", valueName: "host")
    )
    var prometheusHost: String?
}
