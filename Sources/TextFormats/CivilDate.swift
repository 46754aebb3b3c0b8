/// Calendar arithmetic for the dates NH and RFC 3339 write, without Foundation's calendars.
public enum CivilDate {
    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
    public static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The date of a day since 1970-01-01 (Howard Hinnant's civil_from_days).
    public static func date(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// `2026-11-24T01:06:49Z`, or with `.123` milliseconds: RFC 3339 in UTC, written by hand
    /// because Foundation's ISO8601DateFormatter loads ICU (6 MiB of resident pages) to do it.
    public static func rfc3339(epochSeconds: Double, milliseconds: Bool = false) -> String {
        // To the nearest millisecond (a whole one times 1/1000 is rarely exact in binary), clamped
        // to ±300,000 years, far inside Int's range.
        let totalMs = epochSeconds.isFinite ? Int((min(max(epochSeconds, -1e13), 1e13) * 1000).rounded()) : 0
        func floorDiv(_ a: Int, _ b: Int) -> (quotient: Int, remainder: Int) {
            let r = (a % b + b) % b
            return ((a - r) / b, r)
        }
        func pad(_ n: Int, _ width: Int) -> String { String(zeroPadded: n, width: width) }
        let (seconds, ms) = floorDiv(totalMs, 1000)
        let (days, second) = floorDiv(seconds, 86_400)
        let d = date(fromDays: days)
        let time = "\(pad(second / 3600, 2)):\(pad(second / 60 % 60, 2)):\(pad(second % 60, 2))"
        return "\(pad(d.year, 4))-\(pad(d.month, 2))-\(pad(d.day, 2))T\(time)"
            + (milliseconds ? ".\(pad(ms, 3))Z" : "Z")
    }
}
