import ArgumentParser
import Foundation
import Kafka
import News
import Newsroom
import NotificationHubs
import TextFormats

/// `hubcast produce`: publish news items to their category topics.
struct ProduceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "produce",
        abstract: "Publish news items to their category topics.",
        discussion: """
            With --headline, publishes one item built from the flags. Otherwise reads JSON lines from --file \
            (or stdin), one news item per line. Each item is validated first; invalid lines are reported with \
            their line number on stderr and the rest still go out. Ends with `sent N, rejected M, failed K` on \
            stdout and exits 1 if anything was rejected or not delivered.
            """
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var kafka: KafkaOptions
    @OptionGroup var categoryOptions: CategoryOptions
    @OptionGroup var delivery: DeliveryOptions

    @Option(
        name: .long,
        help: ArgumentHelp("JSON-lines file of news items; - or absent reads stdin.", valueName: "path")
    )
    var file: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Category of an item built from flags, and of lines that carry none.", valueName: "name")
    )
    var category: String?

    @Option(name: .long, help: "Headline of one item to publish from flags.")
    var headline: String?

    @Option(name: .long, help: "Id of the item built from flags (default: a new UUID).")
    var id: String?

    @Option(name: .long, help: "Body text of the item built from flags.")
    var body: String?

    @Option(name: .long, help: "Link of the item built from flags.")
    var url: String?

    @Option(
        name: .long,
        help: "Tag expression of the item built from flags (replaces the category tag as the audience)."
    )
    var tagExpression: String?

    @Option(name: .long, help: ArgumentHelp("Expiry of the item built from flags, RFC 3339.", valueName: "time"))
    var expiresAt: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Priority of the item built from flags: breaking goes before anything waiting, bulk gets what is left (default: the category's in run, else normal).",
            valueName: "breaking|normal|bulk"
        )
    )
    var priority: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Tenant of the item built from flags: a run with a routes file may send each tenant's items to a hub of its own.",
            valueName: "name"
        )
    )
    var tenant: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Largest item accepted, in bytes (env HUBCAST_MAX_MESSAGE_BYTES; default 65536).",
            valueName: "bytes"
        )
    )
    var maxMessageBytes: Int?

    func run() async throws {
        let settings = try await common.settings()
        let logger = try common.bootstrapLogging(settings, label: "hubcast.produce")
        let categories = try categoryOptions.resolve(settings)
        let decoder = NewsItemDecoder(
            maxMessageBytes: try settings.int(
                maxMessageBytes,
                "max-message-bytes",
                default: NewsItemDecoder.defaultMaxMessageBytes,
                range: 64...16_777_216
            )
        )
        if let category, categories.topic(for: category) == nil {
            throw CLIError.usage(
                "--category: \(LegibleText.quoted(category)) is not one of \(categories.names.joined(separator: ", "))"
            )
        }
        let reader = try makeReader()

        // Every setting is read before the producer exists, so a bad one ends the command before any
        // connection attempt; outside the `do`, as their errors already name the setting.
        let kafkaConfig = try kafka.configuration(settings)
        let timeout = try kafka.timeout(settings)
        let producer: KafkaProducer
        do {
            producer = try KafkaProducer(configuration: KafkaProducerConfiguration(kafka: kafkaConfig), logger: logger)
        } catch {
            throw CLIError.usage("Kafka configuration", error)
        }
        do {
            try await producer.checkReachable(timeout: timeout)
        } catch {
            throw CLIError.unreachable(
                "could not reach Kafka at \(settings.string(kafka.brokers, "brokers", default: "127.0.0.1:9092")): "
                    + LegibleText.sanitized(String(describing: error))
            )
        }

        let publisher = NewsPublisher(
            producer: producer,
            categories: categories,
            decoder: decoder,
            defaultCategory: category
        )
        let summary = await publisher.publish(from: reader) { problem in
            // A problem may quote the line (a bad field name, a date): never raw to the terminal.
            FileHandle.standardError.write(
                Data("hubcast produce: \(LegibleText.sanitized(problem.description))\n".utf8)
            )
        }
        do {
            try await producer.close()
        } catch {
            logger.error("Some messages were not flushed", metadata: ["error": "\(error)"])
        }
        print("sent \(summary.sent), rejected \(summary.rejected), failed \(summary.failed)")
        if summary.rejected + summary.failed > 0 { throw ExitCode.failure }
    }

    /// Lines to publish: one built from the flags, or the file / stdin.
    private func makeReader() throws -> LineReader {
        guard let headline else {
            // Lines are published as written: a priority goes in the line's own "priority" field.
            for (flag, field, given) in [
                ("--priority", "priority", priority != nil),
                ("--tenant", "tenant", tenant != nil),
                ("--platform", "platforms", !delivery.platform.isEmpty),
                ("--send-at", "sendAt", delivery.sendAt != nil),
            ] where given {
                throw CLIError.usage(
                    "\(flag) is for the item built from flags (--headline); a line in the file carries its own \"\(field)\""
                )
            }
            do {
                return try LineReader(path: file)
            } catch {
                throw CLIError.usage("--file: cannot read \(file.map(LegibleText.quoted) ?? "stdin")")
            }
        }
        guard file == nil else { throw CLIError.usage("--headline and --file are exclusive: give one source of items") }
        guard category != nil || tagExpression != nil else { throw CLIError.usage("--headline needs --category") }
        var expiry: Timestamp?
        if let expiresAt {
            guard let parsed = Timestamp(rfc3339: expiresAt) else {
                throw CLIError.usage("--expires-at: \(LegibleText.quoted(expiresAt)) is not RFC 3339")
            }
            expiry = parsed
        }
        var urgency: Priority?
        if let priority {
            guard let parsed = Priority(name: priority) else {
                throw CLIError.usage("--priority: \(LegibleText.quoted(priority)) is not breaking, normal or bulk")
            }
            urgency = parsed
        }
        var item = NewsItem(
            id: id ?? UUID().uuidString.lowercased(),
            headline: headline,
            category: category,
            body: body,
            url: url,
            tagExpression: tagExpression,
            expiresAt: expiry,
            priority: urgency,
            tenant: tenant
        )
        try delivery.apply(to: &item)
        return LineReader(lines: [item.json])
    }
}
