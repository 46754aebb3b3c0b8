extension Duration {
    /// Whole milliseconds, sub-second part included (`components.seconds * 1000` would turn 500 ms into 0).
    /// Saturates instead of trapping for durations beyond ±292 million years.
    public var inMilliseconds: Int64 {
        let (ms, overflow) = components.seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return components.seconds < 0 ? .min : .max }
        return ms.addingReportingOverflow(components.attoseconds / 1_000_000_000_000_000).partialValue
    }

    /// Whole nanoseconds (as swift-metrics' timers take them); saturates beyond ±292 years.
    public var inNanoseconds: Int64 {
        let (ns, overflow) = components.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return components.seconds < 0 ? .min : .max }
        return ns.addingReportingOverflow(components.attoseconds / 1_000_000_000).partialValue
    }

    /// Seconds as a floating-point number.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// Milliseconds as librdkafka's `int` timeouts take them, clamped to what fits.
    var timeoutMs: Int32 { Int32(clamping: inMilliseconds) }
}
