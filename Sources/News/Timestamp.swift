import TextFormats

/// An RFC 3339 date-time, kept as written and as seconds since the epoch.
public struct Timestamp: Sendable, Equatable {
    public let text: String
    public let epochSeconds: Double

    /// Parses `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`; the same ranges as the schema's pattern.
    public init?(rfc3339 text: String) {
        // Read in place: a copy into an array was an allocation per timestamp of every item.
        let parsed =
            text.utf8.withContiguousStorageIfAvailable(Self.epochSeconds) ?? Self.epochSeconds(Array(text.utf8))
        guard let parsed else { return nil }
        self.text = text
        self.epochSeconds = parsed
    }

    private static func epochSeconds<Bytes: RandomAccessCollection<UInt8>>(_ b: Bytes) -> Double?
    where Bytes.Index == Int {
        guard b.count >= 20 else { return nil }
        func digits(_ at: Int, _ n: Int) -> Int? {
            guard at + n <= b.count else { return nil }
            var v = 0
            for i in at..<(at + n) {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                v = v * 10 + Int(b[i] - 48)
            }
            return v
        }
        guard let year = digits(0, 4), b[4] == 45, let month = digits(5, 2), b[7] == 45, let day = digits(8, 2),
            b[10] == 84 || b[10] == 116, let hour = digits(11, 2), b[13] == 58, let minute = digits(14, 2),
            b[16] == 58, let second = digits(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour <= 23, minute <= 59, second <= 60
        else { return nil }
        var i = 19
        var fraction = 0.0
        if b[i] == 46 {
            i += 1
            var scale = 0.1
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                fraction += Double(b[i] - 48) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        guard i < b.count else { return nil }
        var offsetSeconds = 0
        if b[i] == 90 || b[i] == 122 {
            i += 1
        } else if b[i] == 43 || b[i] == 45 {
            guard let oh = digits(i + 1, 2), i + 3 < b.count, b[i + 3] == 58, let om = digits(i + 4, 2), oh <= 23,
                om <= 59
            else { return nil }
            offsetSeconds = (oh * 3600 + om * 60) * (b[i] == 43 ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = CivilDate.days(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Double(seconds) + fraction
    }
}
