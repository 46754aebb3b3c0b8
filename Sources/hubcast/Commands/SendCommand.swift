import ArgumentParser
import Broadcast
import Foundation
import News
import NotificationHubs
import TextFormats

/// `hubcast send`: one item, now, through the same client and retry path as the pipeline.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send one news item now: a template notification, or native ones per platform.",
        discussion: """
            Builds the item from flags (--category and --headline, optionally --tag-expression or --users) or \
            takes it whole from --json, validates it, and sends it with the same template properties, native \
            renderings and lint, retry policy and SAS token cache as `hubcast run`. Prints one line per send \
            (one per platform, and a long --users list is split into several), then, if any did not go out, how many and why. Nothing is dead-lettered: exit 1 if a \
            send failed, 3 if the hub could not be reached at all, 2 for bad input or settings.
            """
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var hubOptions: HubOptions
    @OptionGroup var delivery: DeliveryOptions

    @Option(name: .long, help: "Category: its tag is the audience unless --tag-expression or --users is given.")
    var category: String?

    @Option(name: .long, help: "The headline.")
    var headline: String?

    @Option(name: .long, help: "Item id (default: a new UUID).")
    var id: String?

    @Option(name: .long, help: "Link sent as the `url` template property.")
    var url: String?

    @Option(name: .long, help: "Audience as a Notification Hubs tag expression, e.g. \"World && !Sports\".")
    var tagExpression: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Audience as user names, comma-separated (tags username:<name>).", valueName: "list")
    )
    var users: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The whole news item as JSON (schemas/news-item.schema.json) instead of the flags above.",
            valueName: "json"
        )
    )
    var json: String?

    func run() async throws {
        let settings = try await common.settings()
        let logger = try common.bootstrapLogging(settings, label: "hubcast.send")
        let (hubConfig, transportConfig) = try hubOptions.configuration(settings)
        let item = try makeItem()
        guard let category = item.category ?? category else {
            throw CLIError.usage("--category: needed to name the notification (\"Breaking <Category> News\")")
        }
        let sends: [PlannedSend]
        do {
            sends = try SendPlanner.plan(
                item,
                category: category,
                priority: item.priority ?? .normal,
                expiresAt: item.expiresAt?.epochSeconds,
                now: Date().timeIntervalSince1970
            )
        } catch {
            switch error {
            case .audience: throw CLIError.usage("--tag-expression", error)
            case .payload: throw CLIError.usage(json == nil ? "--headline" : "--json", error)
            case .schedule: throw CLIError.usage(json == nil ? "--send-at" : "--json", error)
            }
        }

        let client = HubOptions.client(hubConfig, transportConfig, logger: logger)
        var failures: [SendFailure] = []
        for send in sends {
            do {
                let result = try await client.send(
                    send.notification,
                    tagExpression: send.tagExpression,
                    scheduledAt: send.scheduledAt
                )
                // Scheduled, unless its time came during retries and it went now.
                let what =
                    send.scheduledAt.flatMap { result.scheduledID == nil ? nil : $0 }.map {
                        "scheduled \(send.platform) to \(send.tagExpression) for \(NotificationHubClient.scheduleTime($0)): HTTP \(result.status), scheduled id \(result.scheduledID ?? "-")"
                    }
                    ?? "sent \(send.platform) to \(send.tagExpression): HTTP \(result.status), notification id \(result.notificationID ?? "-")"
                print("\(what), attempts \(result.attempts), tracking id \(result.trackingID ?? "-")")
            } catch {
                print(
                    "failed \(send.platform) to \(send.tagExpression): "
                        + LegibleText.sanitized(String(describing: error))
                )
                failures.append(error)
            }
        }
        if failures.isEmpty { return }
        // A batch job's last line: how much did not go out, and why (the last failure's reason).
        let last = failures[failures.count - 1]
        print(
            "not sent: \(failures.count) of \(sends.count) (\(last.reason.name): \(LegibleText.sanitized(last.message)))"
        )
        if failures.allSatisfy({ $0.status == nil && [FailureReason.transport, .timeout, .tls].contains($0.reason) }) {
            throw CLIError.unreachable("could not reach the hub at \(hubConfig.connection.baseURL)")
        }
        throw ExitCode.failure
    }

    private func makeItem() throws -> NewsItem {
        if let json {
            guard headline == nil, !delivery.isGiven else {
                throw CLIError.usage(
                    "--json is exclusive with --headline, --platform and --send-at: give the item one way"
                )
            }
            do {
                return try NewsItemDecoder().decode(Array(json.utf8), topicCategory: category)
            } catch {
                throw CLIError.usage("--json", error)
            }
        }
        guard let headline else { throw CLIError.usage("--headline (or --json) is required") }
        let userList = users.map {
            $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        let item = NewsItem(
            id: id ?? UUID().uuidString.lowercased(),
            headline: headline,
            category: category,
            url: url,
            tagExpression: tagExpression,
            users: userList
        )
        var withPlatforms = item
        try delivery.apply(to: &withPlatforms)
        // Through the validator, so flags obey exactly the rules a Kafka message does.
        do {
            return try NewsItemDecoder().decode(withPlatforms.json)
        } catch {
            throw CLIError.usage(LegibleText.sanitized(String(describing: error)))
        }
    }
}
