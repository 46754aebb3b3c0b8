import CCurl
import Foundation
import News
import Testing
import TextFormats

@testable import NotificationHubs

/// The hand-written formatting that replaced Foundation's formatters (which load ICU) and the
/// string escaping every request body goes through.
@Suite struct TextWritingTests {
    @Test func rfc3339MatchesKnownDates() {
        #expect(CivilDate.rfc3339(epochSeconds: 0) == "1970-01-01T00:00:00Z")
        #expect(CivilDate.rfc3339(epochSeconds: 951_782_400) == "2000-02-29T00:00:00Z")
        #expect(CivilDate.rfc3339(epochSeconds: 4_107_542_400) == "2100-03-01T00:00:00Z")
        #expect(CivilDate.rfc3339(epochSeconds: 1_795_480_009.123, milliseconds: true) == "2026-11-24T00:26:49.123Z")
        #expect(CivilDate.rfc3339(epochSeconds: -1) == "1969-12-31T23:59:59Z")
        #expect(CivilDate.rfc3339(epochSeconds: -0.001, milliseconds: true) == "1969-12-31T23:59:59.999Z")
        #expect(CivilDate.rfc3339(epochSeconds: .nan) == "1970-01-01T00:00:00Z")
    }

    @Test func rfc3339RoundTripsThroughTheItemTimestampParser() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            // Any millisecond from 1970 to 2400.
            let ms = Int64.random(in: 0..<13_569_465_600_000, using: &generator)
            let text = CivilDate.rfc3339(epochSeconds: Double(ms) / 1000, milliseconds: true)
            let parsed = Timestamp(rfc3339: text).map { Int64(($0.epochSeconds * 1000).rounded()) }
            #expect(parsed == ms, "\(ms) → \(text)")
        }
    }

    @Test func daysAndDatesAreInverse() {
        for days in stride(from: -800_000, through: 800_000, by: 7) {
            let d = CivilDate.date(fromDays: days)
            #expect(CivilDate.days(year: d.year, month: d.month, day: d.day) == days)
            #expect((1...12).contains(d.month) && (1...31).contains(d.day))
        }
    }

    @Test func fixedDecimalsPrintAsPrintfDoes() {
        func written(_ value: Double, _ decimals: Int) -> String {
            var w = JSONWriter()
            w.number(value, decimals: decimals)
            return String(decoding: w.bytes, as: UTF8.self)
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let value = Double.random(in: -1e7...1e7, using: &generator)
            for decimals in [0, 1, 2] {
                // Away from a half, where printf's exact binary value and a scaled one may round apart.
                let scaled = abs(value) * pow(10, Double(decimals))
                guard abs(scaled - scaled.rounded(.down) - 0.5) > 1e-6 else { continue }
                #expect(written(value, decimals) == String(format: "%.\(decimals)f", value))
            }
        }
        #expect(written(12.0, 2) == "12.00")
        #expect(written(0.05, 1) == "0.1")
        #expect(written(-0.04, 1) == "0.0")
        #expect(written(.nan, 1) == "null")
        #expect(written(.infinity, 2) == "null")
        #expect(written(1e30, 1) == "null")
    }

    @Test func quotedStringsParseBackToThemselves() throws {
        let alphabet: [Character] = [
            "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "漢", "😀",
            "\u{2028}",
        ]
        var generator = SystemRandomNumberGenerator()
        for length in 0..<300 {
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            var bytes: [UInt8] = []
            JSONWriter.appendQuoted(text, to: &bytes)
            let parsed = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) as? String
            #expect(parsed == text)
            // Only what RFC 8259 requires is escaped: the rest is copied.
            #expect(!bytes.contains { $0 < 0x20 })
        }
    }

    @Test func headerListsAreSharedWhileInUseAndFreedOnlyWhenUnused() {
        var cache = HeaderListCache(capacity: 2)
        let world = [HTTPHeader("ServiceBusNotification-Tags", "World"), HTTPHeader("Authorization", "token-1")]
        let sports = [HTTPHeader("ServiceBusNotification-Tags", "Sports"), HTTPHeader("Authorization", "token-1")]
        let a = cache.take(world)
        let b = cache.take(world)
        #expect(a === b && a.users == 2)
        #expect(Self.lines(a) == ["ServiceBusNotification-Tags: World", "Authorization: token-1", "Expect:"])
        let c = cache.take(sports)
        #expect(c !== a && cache.count == 2)
        // Full, and every list in use: a third one is added, none is freed.
        let rotatedHeaders = [
            HTTPHeader("ServiceBusNotification-Tags", "World"), HTTPHeader("Authorization", "token-2"),
        ]
        let rotated = cache.take(rotatedHeaders)
        #expect(cache.count == 3)
        cache.release(a)
        cache.release(b)
        cache.release(c)
        // Full again: the unused lists go, the one in use stays.
        _ = cache.take([HTTPHeader("x", "y")])
        #expect(cache.count == 2)
        #expect(cache.take(rotatedHeaders) === rotated && rotated.users == 2)
        cache.freeAll()
        #expect(cache.count == 0)
    }

    static func lines(_ list: HeaderListCache.List) -> [String] {
        var lines: [String] = []
        var node = list.pointer
        while let current = node {
            lines.append(String(cString: current.pointee.data))
            node = current.pointee.next
        }
        return lines
    }
}

/// The per-message telemetry document, in the service's shape (namespaces, several platforms).
@Suite struct NotificationDetailsTests {
    static let service = """
        <NotificationDetails xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance">\
        <NotificationId>1-2-3</NotificationId><Location>sb://ns.servicebus.windows.net/hub/messages/1-2-3</Location>\
        <State>Completed</State><EnqueueTime>2026-11-26T10:00:00Z</EnqueueTime><TargetPlatforms>apple,fcmv1</TargetPlatforms>\
        <ApnsOutcomeCounts><Outcome><Name>Success</Name><Count>3</Count></Outcome><Outcome><Name>InvalidCredentials</Name><Count>1</Count></Outcome></ApnsOutcomeCounts>\
        <FcmV1OutcomeCounts><Outcome><Name>Success</Name><Count>2</Count></Outcome></FcmV1OutcomeCounts></NotificationDetails>
        """

    @Test func successesAreSummedOverPlatformsAndOtherOutcomesKept() throws {
        let details = try #require(NotificationDetails(xml: Self.service))
        #expect(details.state == "Completed" && details.isFinal)
        #expect(details.successes == 5)
        #expect(details.outcomes.map(\.name) == ["Success", "InvalidCredentials", "Success"])
        #expect(details.platforms.map(\.platform) == ["Apns", "FcmV1"])
        #expect(details.platforms[0].outcomes.map(\.count) == [3, 1])
        #expect(details.platforms[1].outcomes.map(\.count) == [2])
        // The elements the service writes around the counts are not platforms.
        #expect(
            NotificationDetails(
                xml:
                    "<NotificationDetails><State>Completed</State><NotificationBody>OutcomeCounts></NotificationBody></NotificationDetails>"
            )?.platforms.isEmpty == true
        )
    }

    @Test func statesBeforeTheEndAreNotFinalAndADocumentWithoutStateIsRefused() {
        for state in ["Enqueued", "Processing", "Scheduled", "Unknown"] {
            #expect(
                NotificationDetails(xml: "<NotificationDetails><State>\(state)</State></NotificationDetails>")?.isFinal
                    == false
            )
        }
        #expect(
            NotificationDetails(xml: "<NotificationDetails><State>NoTargetFound</State></NotificationDetails>")?.isFinal
                == true
        )
        #expect(NotificationDetails(xml: "<Error><Code>404</Code></Error>") == nil)
        // An outcome without a numeric count is left out, not guessed.
        #expect(
            NotificationDetails(xml: "<State>Completed</State><Outcome><Name>Success</Name><Count>x</Count></Outcome>")?
                .outcomes.isEmpty == true
        )
    }
}
