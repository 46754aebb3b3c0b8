import NotificationHubs
import TestSupport
import Testing

/// Every rule of `NativeLint`, refused by name; the valid payload of each platform accepted.
@Suite struct NativeLintTests {
    func check(_ platform: NativePlatform, _ payload: String, _ headers: [String: String] = [:]) -> LintViolation? {
        NativeLint.check(platform, payload: Array(payload.utf8), header: { headers[$0] })
    }

    let alert = ["apns-push-type": "alert", "apns-priority": "10"]

    @Test func documentedPayloadsPass() {
        #expect(check(.apple, #"{"aps":{"alert":{"title":"t","body":"b"},"sound":"default"},"id":"1"}"#, alert) == nil)
        #expect(
            check(
                .apple,
                #"{"aps":{"content-available":1}}"#,
                ["apns-push-type": "background", "apns-priority": "5", "apns-expiration": "1800000000"]
            ) == nil
        )
        #expect(
            check(
                .fcmv1,
                #"{"message":{"notification":{"title":"t","body":"b","image":"i"},"data":{"k":"v"},"android":{"priority":"HIGH","ttl":"3600s","data":{"a":"b"}}}}"#
            ) == nil
        )
        #expect(check(.fcmv1, #"{"message":{"android":{"ttl":"0.5s"}}}"#) == nil)
        let toast =
            #"<?xml version="1.0"?><!-- c --><toast launch="a&amp;b"><visual><binding template='ToastGeneric'><text>Q &#x26; A</text></binding></visual></toast>"#
        #expect(check(.windows, toast, ["x-wns-type": "wns/toast"]) == nil)
        #expect(check(.windows, "<badge value=\"3\"/>", ["x-wns-type": "wns/badge"]) == nil)
        #expect(check(.windows, "any bytes", ["x-wns-type": "wns/raw"]) == nil)
    }

    @Test func eachRuleIsNamed() {
        let big = String(repeating: "x", count: 5000)
        let cases: [(LintViolation?, NativePlatform, LintViolation.Rule)] = [
            (check(.apple, String(repeating: " ", count: 65 * 1024) + "{}", alert), .apple, .hubSize),
            (check(.apple, #"{"aps":{"alert":"\#(big)"}}"#, alert), .apple, .size),
            (check(.apple, #"{"aps":{"alert":"a"}"#, alert), .apple, .json),
            (check(.apple, #"["aps"]"#, alert), .apple, .json),
            (check(.apple, #"{"alert":"a"}"#, alert), .apple, .aps),
            (check(.apple, #"{"aps":{"alert":"a"}}"#), .apple, .pushType),
            (check(.apple, #"{"aps":{"alert":"a"}}"#, ["apns-push-type": "loud"]), .apple, .pushType),
            (check(.apple, #"{"aps":{"content-available":1}}"#, alert), .apple, .pushType),
            (
                check(
                    .apple,
                    #"{"aps":{"alert":"a","content-available":1}}"#,
                    ["apns-push-type": "background", "apns-priority": "5"]
                ),
                .apple, .pushType
            ),
            (
                check(
                    .apple,
                    #"{"aps":{"content-available":1}}"#,
                    ["apns-push-type": "background", "apns-priority": "10"]
                ), .apple, .pushType
            ),
            (
                check(.apple, #"{"aps":{"alert":"a"}}"#, ["apns-push-type": "alert", "apns-priority": "7"]), .apple,
                .apnsHeader
            ),
            (
                check(.apple, #"{"aps":{"alert":"a"}}"#, ["apns-push-type": "alert", "apns-expiration": "soon"]),
                .apple, .apnsHeader
            ),
            (check(.fcmv1, #"{"message":{"data":{"k":"\#(big)"}}}"#), .fcmv1, .size),
            (check(.fcmv1, "message"), .fcmv1, .json),
            (check(.fcmv1, #"{"notification":{"title":"t"}}"#), .fcmv1, .legacyGCM),
            (check(.fcmv1, #"{"message":{},"time_to_live":60}"#), .fcmv1, .legacyGCM),
            (check(.fcmv1, #"{"msg":{}}"#), .fcmv1, .fcmShape),
            (check(.fcmv1, #"{"message":{"notification":{"title":"t","sound":"x"}}}"#), .fcmv1, .fcmShape),
            (check(.fcmv1, #"{"message":{"notification":{"title":1}}}"#), .fcmv1, .fcmShape),
            (check(.fcmv1, #"{"message":{"data":{"n":1}}}"#), .fcmv1, .fcmShape),
            (check(.fcmv1, #"{"message":{"android":{"priority":"high"}}}"#), .fcmv1, .fcmShape),
            (check(.fcmv1, #"{"message":{"android":{"ttl":3600}}}"#), .fcmv1, .fcmShape),
            (check(.fcmv1, #"{"message":{"android":{"ttl":"1h"}}}"#), .fcmv1, .fcmShape),
            (check(.windows, "<toast>\(big)</toast>", ["x-wns-type": "wns/toast"]), .windows, .size),
            (check(.windows, "<toast/>"), .windows, .wnsType),
            (check(.windows, "<toast/>", ["x-wns-type": "wns/popup"]), .windows, .wnsType),
            (check(.windows, "<toast/>", ["x-wns-type": "wns/tile"]), .windows, .wnsType),
            (check(.windows, "<toast><text>a</toast>", ["x-wns-type": "wns/toast"]), .windows, .xml),
        ]
        for (i, (violation, platform, rule)) in cases.enumerated() {
            #expect(
                violation?.platform == platform && violation?.rule == rule,
                "case \(i): \(String(describing: violation))"
            )
            #expect(violation.map { "\($0)".hasPrefix("\(platform) payload breaks rule \(rule.rawValue): ") } == true)
        }
    }

    @Test func malformedXMLIsRefusedWithWhereAndWhy() throws {
        let cases: [(String, String)] = [
            ("", "no root element"),
            ("text<toast/>", "text before the root element"),
            ("<toast>", "<toast> is not closed"),
            ("<toast></tile>", "does not match"),
            ("<toast/><toast/>", "content after the root element"),
            ("<toast a=1/>", "not quoted"),
            ("<toast a='1' a='2'/>", "appears twice"),
            ("<toast a='1'b='2'/>", "separated by white space"),
            ("<toast a='<'/>", "< in an attribute value"),
            ("<toast>&nbsp;</toast>", "unknown or malformed reference"),
            ("<toast>&#0;</toast>", "unknown or malformed reference"),
            ("<toast>a & b</toast>", "reference"),
            ("<!DOCTYPE toast><toast/>", "DOCTYPE is not allowed"),
            ("<!--><toast/>", "comment not closed"),
            ("<1toast/>", "a name was expected"),
            ("<toast>\u{1B}</toast>", "control character 27"),
            ("<toast a='\u{0}'/>", "control character 0"),
            ("<toast>&#xFFFE;</toast>", "unknown or malformed reference"),
        ]
        for (xml, reason) in cases {
            #expect(throws: XMLShape.Malformed.self, "\(xml)") { try XMLShape.rootElement(of: Array(xml.utf8)) }
            do {
                _ = try XMLShape.rootElement(of: Array(xml.utf8))
            } catch {
                #expect(error.reason.contains(reason), "\(xml): \(error)")
            }
        }
        #expect(try XMLShape.rootElement(of: Array("\u{FEFF}<tile><![CDATA[<x>]]></tile>\n".utf8)) == "tile")
    }

    /// Found by the planner's fuzz test: a quote followed by a combining mark is one Character
    /// that is not `"`, so escaping by Character left the quote in and closed the attribute.
    @Test func escapingIsByScalarAndDropsWhatXMLCannotCarry() throws {
        let hostile = "a\"\u{301}b<\u{1B}&'\u{0}\u{FFFE}c"
        let escaped = XMLText.escape(hostile)
        #expect(escaped == "a&quot;\u{301}b&lt;&amp;&apos;c")
        #expect(try XMLShape.rootElement(of: Array("<toast launch=\"\(escaped)\">\(escaped)</toast>".utf8)) == "toast")
    }

    /// Hostile bytes: the checker ends, without crashing, on anything; nesting 100,000 deep does
    /// not touch the stack.
    @Test func hostileBytesNeverCrashTheChecks() throws {
        var random = SeededGenerator(seed: 29)
        let alphabet = Array("<>/=\"'&#;x! ?-[]CDATAtoast\u{0}é".utf8)
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...60, using: &random)).map { _ in
                alphabet.randomElement(using: &random) ?? 0
            }
            _ = try? XMLShape.rootElement(of: bytes)
            for platform in NativePlatform.allCases {
                _ = NativeLint.check(platform, payload: bytes, header: { _ in "wns/toast" })
            }
        }
        let deep = Array((String(repeating: "<a>", count: 100_000) + String(repeating: "</a>", count: 100_000)).utf8)
        #expect(try XMLShape.rootElement(of: deep) == "a")
    }
}
