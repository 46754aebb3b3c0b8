import ArgumentParser
import Broadcast
import Foundation
import NotificationHubs
import Routes
import TextFormats

/// `--routes`: the hubs `run` and `replay` send to and which items go to which (a YAML file); without it,
/// the one hub that `--hub` and the connection string name.
struct RoutesOption: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "YAML file naming several hubs (each with its connection string file and, optionally, its known quota) and which categories and tenants go to which; replaces --hub and the connection string (env HUBCAST_ROUTES; default: one hub).",
            valueName: "path"
        )
    )
    var routes: String?

    /// The hubs to send to, by number, the routes between them, and the transport they share.
    func hubs(
        _ settings: Settings,
        hubOptions: HubOptions,
        categories: [String]
    ) throws(CLIError) -> (hubs: [PipelineService.Hub], routes: HubRoutes, transport: TransportConfiguration) {
        guard let path = settings.string(routes, "routes") else {
            let (configuration, transport) = try hubOptions.configuration(settings)
            return (
                [PipelineService.Hub(name: configuration.hubName, configuration: configuration)],
                .single(configuration.hubName), transport
            )
        }
        guard !(try hubOptions.namesAHub(settings)) else {
            throw .usage(
                "--routes names the hubs and their connection strings: drop --hub and the connection string (flag, environment or config file)"
            )
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw .usage("--routes: cannot read \(LegibleText.quoted(path))")
        }
        let file: RoutesFile
        do {
            file = try RoutesFile(
                parsing: text,
                categories: categories,
                folder: URL(fileURLWithPath: path).deletingLastPathComponent().path
            )
        } catch {
            throw .usage("--routes \(LegibleText.sanitized(path)): \(error)")
        }
        var transport = TransportConfiguration()
        var hubs: [PipelineService.Hub] = []
        for hub in file.hubs {
            let field = "--routes: hubs.\(hub.name).connection-string-file"
            guard let secret = try? String(contentsOfFile: hub.connectionStringFile, encoding: .utf8) else {
                throw .usage("\(field): cannot read \(LegibleText.quoted(hub.connectionStringFile))")
            }
            let (configuration, shared) = try hubOptions.configuration(
                settings,
                hubName: hub.hubName,
                connection: HubOptions.connection(secret, setting: "\(field): the connection string")
            )
            guard !hubs.contains(where: { $0.configuration.resourceURI == configuration.resourceURI }) else {
                throw .usage(
                    "--routes: hubs.\(hub.name) is the same hub as another entry (\(hub.hubName) in one namespace)"
                )
            }
            transport = shared
            hubs.append(PipelineService.Hub(name: hub.name, configuration: configuration, maxRate: hub.maxRate))
        }
        return (hubs, file.routes, transport)
    }
}
