import Testing

@testable import HubEmulator

@Suite struct TemplateTests {
    func render(_ body: String, _ properties: [String: String]) throws -> String {
        String(decoding: try CompiledTemplate(body: body).render(CompiledTemplate.normalize(properties)), as: UTF8.self)
    }

    @Test func seedTemplate() throws {
        #expect(
            try render(#"{"aps":{"alert":"$(messageParam)"}}"#, ["messageParam": "Breaking World News : Quake"])
                == #"{"aps":{"alert":"Breaking World News : Quake"}}"#
        )
    }

    @Test func everyExpressionForm() throws {
        let p = ["Name": "Zażółć gęślą", "count": "40", "word": "not a number", "link": "a b/c?d"]
        #expect(try render(#"{"a":"$(name)"}"#, p) == #"{"a":"Zażółć gęślą"}"#)
        #expect(try render(#"{"a":"$(name, 4)"}"#, p) == #"{"a":"Zażó"}"#)
        #expect(try render(#"{"a":".(name,4)"}"#, p) == #"{"a":"Zażó…"}"#)
        #expect(try render(#"{"a":"%(link)"}"#, p) == #"{"a":"a%20b%2Fc%3Fd"}"#)
        #expect(try render(##"{"badge":"#(count)","b":"#(word)"}"##, p) == #"{"b":"not a number","badge":40}"#)
        #expect(try render(#"{"a":"{$(name) + ' - ' + $(count)}"}"#, p) == #"{"a":"Zażółć gęślą - 40"}"#)
        #expect(
            try render(#"{"a":"plain $(name) text","n":3,"t":true,"z":null,"l":["$(count)"]}"#, p)
                == #"{"a":"plain $(name) text","l":["40"],"n":3,"t":true,"z":null}"#
        )
        #expect(try render(#"{"a":"$(missing)"}"#, p) == #"{"a":""}"#)
        #expect(try render(#"{"a":"$(name)"}"#, ["name": "quote\" and \\ slash"]) == #"{"a":"quote\" and \\ slash"}"#)
    }

    @Test(arguments: [#"not json"#, #"{"a":"$(bad name)"}"#, #"{"a":"{$(x) + "#, #"{"a":".(x)"}"#, #"{"a":"$x"}"#])
    func invalidTemplatesAreRefused(body: String) {
        #expect(throws: CompiledTemplate.Invalid.self) { try CompiledTemplate(body: body) }
    }
}
