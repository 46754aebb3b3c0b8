import Foundation
/// Renders a snapshot in Prometheus' text exposition format: counters, gauges, and timers as
/// summaries in seconds (p50, p99, count).
public enum PrometheusText {
    public static func render(_ s: InMemoryMetrics.Snapshot) -> String {
        var out = ""
        func labels(_ key: InMemoryMetrics.Key, _ extra: String? = nil) -> String {
            let parts = key.dimensions.map { pair -> String in
                let kv = pair.split(separator: "=", maxSplits: 1)
                return "\(kv[0])=\"\(kv.count > 1 ? escape(String(kv[1])) : "")\""
            } + (extra.map { [$0] } ?? [])
            return parts.isEmpty ? "" : "{" + parts.joined(separator: ",") + "}"
        }
        for (label, entries) in Dictionary(grouping: s.counters, by: { $0.key.label }).sorted(by: { $0.key < $1.key }) {
            out += "# TYPE \(label) counter\n"
            for (key, value) in entries.sorted(by: { $0.key.dimensions.lexicographicallyPrecedes($1.key.dimensions) }) {
                out += "\(label)\(labels(key)) \(value)\n"
            }
        }
        for (label, entries) in Dictionary(grouping: s.meters, by: { $0.key.label }).sorted(by: { $0.key < $1.key }) {
            out += "# TYPE \(label) gauge\n"
            for (key, value) in entries.sorted(by: { $0.key.dimensions.lexicographicallyPrecedes($1.key.dimensions) }) {
                out += "\(label)\(labels(key)) \(value)\n"
            }
        }
        for (label, entries) in Dictionary(grouping: s.totalTimers, by: { $0.key.label }).sorted(by: { $0.key < $1.key }) {
            out += "# TYPE \(label)_seconds summary\n"
            for (key, h) in entries.sorted(by: { $0.key.dimensions.lexicographicallyPrecedes($1.key.dimensions) }) {
                for q in [0.5, 0.99] {
                    out += "\(label)_seconds\(labels(key, "quantile=\"\(q)\"")) \(Double(h.value(atQuantile: q)) / 1_000_000)\n"
                }
                out += "\(label)_seconds_count\(labels(key)) \(h.count)\n"
            }
        }
        return out
    }

    private static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }
}
