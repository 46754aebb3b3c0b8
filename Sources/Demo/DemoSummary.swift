import Broadcast
import Foundation
import HubEmulator
import Kafka
import News
import Telemetry

/// What the demo did, and whether every valid item was delivered.
public struct DemoSummary: Sendable {
    let brokers: String
    let emulatorURL: String
    let devices: Int
    let followers: [String: Int]
    let validItems: [String: Int]
    let backend: DemoBackendStep.Outcome
    let deliveries: [NotificationHubEmulator.Delivery]
    let metrics: InMemoryMetrics.Snapshot
    let elapsed: Duration

    /// Every valid item was accepted by the hub, nothing failed.
    public var allDelivered: Bool {
        deliveries.count == validItems.values.reduce(0, +) && metrics.counter("hubcast_failed") == 0
            && backend.succeeded
            && metrics.counter("hubcast_sent") == Int64(deliveries.count)
    }

    /// The summary for people.
    public var text: String {
        var lines: [String] = []
        lines.append(
            "hubcast demo: Kafka dev broker at \(brokers) (in memory), Notification Hubs emulator at \(emulatorURL)"
        )
        lines.append(
            "simulated audience: \(devices) devices, each following some categories; \(validItems.values.reduce(0, +)) valid items published"
        )
        lines.append("")
        lines.append(
            pad("category", 12) + pad("items", 7, right: true) + pad("sends", 7, right: true)
                + pad("devices reached", 17, right: true)
                + pad("e2e p50", 10, right: true) + pad("e2e p99", 10, right: true)
        )
        let byCategory = InMemoryMetrics.Snapshot.merged(
            metrics.intervalTimers,
            label: PipelineMetrics.endToEndLabel,
            by: "category"
        )
        let byPriorityName = InMemoryMetrics.Snapshot.merged(
            metrics.intervalTimers,
            label: PipelineMetrics.endToEndLabel,
            by: "priority"
        )
        for category in Categories.seedNames {
            let sends = deliveries.filter { $0.tagExpression == category }
            let reached = sends.reduce(0) { $0 + $1.matched }
            let e2e = byCategory[category]
            lines.append(
                pad(category, 12) + pad("\(validItems[category] ?? 0)", 7, right: true)
                    + pad("\(sends.count)", 7, right: true)
                    + pad("\(reached)", 17, right: true) + pad(ms(e2e?.value(atQuantile: 0.5)), 10, right: true)
                    + pad(ms(e2e?.value(atQuantile: 0.99)), 10, right: true)
            )
        }
        let byPriority = Priority.mostUrgentFirst.compactMap { priority -> String? in
            guard let e2e = byPriorityName[priority.name], e2e.count > 0 else { return nil }
            return "\(priority.name) \(ms(e2e.value(atQuantile: 0.5))) / \(ms(e2e.value(atQuantile: 0.99)))"
        }
        let personal = deliveries.filter { $0.tagExpression?.hasPrefix("username:") == true }
        if !personal.isEmpty {
            lines.append(
                pad("(users)", 12) + pad("\(validItems["(users)"] ?? 0)", 7, right: true)
                    + pad("\(personal.count)", 7, right: true)
                    + pad("\(personal.reduce(0) { $0 + $1.matched })", 17, right: true)
            )
        }
        if !byPriority.isEmpty { lines.append("e2e p50 / p99 by priority: " + byPriority.joined(separator: ", ")) }
        lines.append("")
        if backend.succeeded {
            lines.append(
                "backend: \(DemoBackendStep.reader) registered a device over HTTP (Basic, bcrypt), got a personal "
                    + "notification from \(DemoBackendStep.newsdesk) and fetched secure payload \(backend.secureID ?? "-") with their own credentials"
            )
        } else {
            lines.append("backend: FAILED: \(backend.problem ?? "the secure payload was not returned")")
        }
        let seconds = elapsed.inSeconds
        lines.append(
            "sent \(metrics.counter("hubcast_sent")), failed \(metrics.counter("hubcast_failed")), invalid \(metrics.counter("hubcast_invalid")) (dead-lettered \(metrics.counter("hubcast_dead_lettered"))), expired \(metrics.counter("hubcast_expired")) (skipped)"
        )
        lines.append(
            String(
                format:
                    "pipeline ran %.1f s, including joining the consumer group and 2 s of idle wait before stopping",
                seconds
            )
        )
        lines.append(
            "e2e: Kafka message timestamp to the hub's 201, in steady state: items published one by one at 50 a second after the first was delivered (which also paid for the consumer's start-up)"
        )
        lines.append(allDelivered ? "every valid item was delivered" : "NOT every valid item was delivered")
        return lines.joined(separator: "\n")
    }

    private func pad(_ s: String, _ width: Int, right: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, width - s.count))
        return right ? fill + s : s + fill
    }

    private func ms(_ micros: Int64?) -> String {
        guard let micros else { return "-" }
        return String(format: "%.0f ms", Double(micros) / 1000)
    }
}
