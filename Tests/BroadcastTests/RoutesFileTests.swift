import Kafka
import Logging
import News
import Testing

@testable import Broadcast
@testable import Routes

/// The routes file of `run --routes`, and what the preparer makes of its routes.
@Suite struct RoutesFileTests {
    static let categories = Categories.seedNames

    static let good = """
        hubs:
          europe:
            hub: news-eu
            connection-string-file: secrets/eu
            max-rate: 500
          americas:
            hub: news-us
            connection-string-file: /run/secrets/us
        categories:
          Sports: americas
        tenants:
          brand-b: americas
          no: europe
        default: europe
        """

    func parse(_ text: String) throws(RoutesFileError) -> RoutesFile {
        try RoutesFile(parsing: text, categories: Self.categories, folder: "/etc/hubcast")
    }

    func refusal(_ text: String) -> String {
        do {
            _ = try parse(text)
            return "accepted"
        } catch {
            return error.description
        }
    }

    @Test func aFileNamesItsHubsInOrderAndRoutesByTenantThenCategoryThenDefault() throws {
        let file = try parse(Self.good)
        #expect(
            file.hubs == [
                RoutesFile.Hub(
                    name: "europe",
                    hubName: "news-eu",
                    connectionStringFile: "/etc/hubcast/secrets/eu",
                    maxRate: 500
                ),
                RoutesFile.Hub(
                    name: "americas",
                    hubName: "news-us",
                    connectionStringFile: "/run/secrets/us",
                    maxRate: nil
                ),
            ]
        )
        let routes = file.routes
        #expect(routes.hubs == ["europe", "americas"])
        #expect(routes.hub(category: "Sports", tenant: nil) == .success(1))
        #expect(routes.hub(category: "World", tenant: nil) == .success(0))
        #expect(routes.hub(category: "World", tenant: "brand-b") == .success(1), "the tenant wins over the category")
        #expect(routes.hub(category: "Sports", tenant: "brand-x") == .success(1), "an unknown tenant: its category")
        // YAML 1.1 would read `no` as false: a tenant is the text it is written as.
        #expect(routes.hub(category: "Sports", tenant: "no") == .success(0))
        #expect(!routes.isSingle)
    }

    @Test func oneHubWithNoRoutesTakesEverything() throws {
        let file = try parse(
            """
            hubs:
              only: {hub: news, connection-string-file: conn}
            """
        )
        #expect(file.routes.isSingle)
        #expect(file.routes.hub(category: "Science", tenant: "t") == .success(0))
    }

    @Test(arguments: [
        ("hubs: [", "not valid YAML"),
        ("- a\n- b", "must be a mapping with hubs"),
        ("hubs: {}", "hubs: name at least one hub"),
        (
            "hubz:\n  a: {hub: h, connection-string-file: f}",
            #"the file: unknown key "hubz" (expected hubs, categories, tenants, default)"#
        ),
        ("hubs:\n  a: {connection-string-file: f}", "hubs.a.hub: missing"),
        ("hubs:\n  a: {hub: h}", "hubs.a.connection-string-file: missing"),
        ("hubs:\n  a: {hub: h, connection-string-file: f, rate: 3}", #"hubs.a: unknown key "rate""#),
        (
            "hubs:\n  a: {hub: h, connection-string-file: f, max-rate: fast}",
            #"hubs.a.max-rate: must be a number of sends per second above 0, got "fast""#
        ),
        ("hubs:\n  a: {hub: h, connection-string-file: f, max-rate: -1}", "hubs.a.max-rate: must be a number"),
        ("hubs:\n  a: {hub: [h], connection-string-file: f}", "hubs.a.hub: must be a single value"),
        ("hubs:\n  a b: {hub: h, connection-string-file: f}", #"hubs: "a b" is not a hub name"#),
        ("hubs:\n  a: h", "hubs.a: must be a mapping"),
        (
            "hubs:\n  a: {hub: h, connection-string-file: f}\n  b: {hub: i, connection-string-file: g}\ncategories:\n  Sports: b",
            "no hub for category World, Politics, Business, Technology, Science: route it under categories, or name a default hub"
        ),
        (
            "hubs:\n  a: {hub: h, connection-string-file: f}\ncategories:\n  Sport: a\ndefault: a",
            #"categories: "Sport" is not one of this run's categories"#
        ),
        (
            "hubs:\n  a: {hub: h, connection-string-file: f}\ncategories:\n  Sports: b",
            #"categories.Sports: names hub "b", which hubs does not list (a)"#
        ),
        (
            "hubs:\n  a: {hub: h, connection-string-file: f}\ntenants:\n  brand b: a\ndefault: a",
            #"tenants: "brand b" is not a tenant"#
        ),
        ("hubs:\n  a: {hub: h, connection-string-file: f}\ndefault: z", #"default: names hub "z""#),
        ("hubs:\n  a: {hub: h, connection-string-file: f}\ndefault: a\ndefault: a", "duplicated key(s): 'default'"),
    ])
    func aBadFileIsRefusedNamingTheField(text: String, expected: String) {
        let said = refusal(text)
        #expect(said.contains(expected), "\(said)")
    }

    @Test func eachHubIsPacedToItsOwnKnownQuotaElseTheRunsOne() throws {
        var configuration = PipelineConfiguration(categories: try Categories())
        configuration.maxRate = 100
        let two = PipelineService.shell(configuration, hubs: ["eu", "us"], maxRates: [nil, 10])
        #expect(two.engine.hubPacing.map(\.maxRate) == [100, 10])
        #expect(two.hubNames == ["eu", "us"])
        let one = PipelineService.shell(configuration, hubs: ["only"], maxRates: [500])
        #expect(one.engine.hubPacing.map(\.maxRate) == [500], "one hub's own max-rate counts too")
        let plain = PipelineService.shell(configuration, hubs: ["only"], maxRates: [nil])
        #expect(plain.engine.hubPacing.isEmpty && plain.engine.pacing.maxRate == 100)
    }

    @Test func thePreparerSendsEachItemToItsHubAndDeadLettersOneWithNone() throws {
        let routes = HubRoutes(hubs: ["eu", "us"], byTenant: ["brand-b": 1], byCategory: ["Sports": 1], fallback: nil)
        var preparer = NewsPreparer(
            categories: try Categories(),
            maxMessageBytes: 65_536,
            delivered: DeliveredSends(capacity: 100),
            metrics: PipelineMetrics(categories: Categories.seedNames, hubs: routes.hubs),
            logger: Logger(label: "hubcast.tests"),
            routes: routes
        )
        func hub(_ json: String, topic: String) -> Int? {
            let work = preparer.prepare(KafkaMessage(topic: topic, partition: 0, offset: 1, value: Array(json.utf8)))
            guard case .sends(let sends, _, _, let hub) = work else { return nil }
            #expect(sends.allSatisfy { $0.hub == hub })
            return hub
        }
        #expect(hub(#"{"id":"a","headline":"h"}"#, topic: "news.sports") == 1)
        #expect(hub(#"{"id":"b","headline":"h","tenant":"brand-b"}"#, topic: "news.world") == 1)
        // World has no route and there is no default: invalid, naming what has no route.
        let work = preparer.prepare(
            KafkaMessage(topic: "news.world", partition: 0, offset: 2, value: Array(#"{"id":"c","headline":"h"}"#.utf8))
        )
        guard case .deadLetter(let record) = work else {
            Issue.record("an item with no hub was not dead-lettered: \(work)")
            return
        }
        #expect(record.reason == "invalid")
        #expect(record.error == #"category: no hub for it: the routes name category "World" and give no default hub"#)
        let tenanted = preparer.prepare(
            KafkaMessage(
                topic: "news.world",
                partition: 0,
                offset: 3,
                value: Array(#"{"id":"d","headline":"h","tenant":"brand-x"}"#.utf8)
            )
        )
        guard case .deadLetter(let second) = tenanted else {
            Issue.record("an item with no hub was not dead-lettered")
            return
        }
        #expect(
            second.error.hasPrefix(#"tenant: no hub for it: the routes name tenant "brand-x" nor category "World""#)
        )
    }
}
