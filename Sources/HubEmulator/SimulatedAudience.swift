import News
import NotificationHubs

/// Pre-registered simulated devices: seed 000's template, a random subset of the categories and
/// a `username:user<i>` tag each.
public enum SimulatedAudience {
    public static let seedTemplate = Registration.Template(
        body: #"{"aps":{"alert":"$(messageParam)"}}"#,
        name: "simpleAPNSTemplate",
        expiry: "0"
    )

    /// Registers `count` devices in `hub`; the same seed gives the same audience.
    /// Returns, per category, how many devices follow it.
    @discardableResult
    public static func populate(
        _ emulator: NotificationHubEmulator,
        hub: String,
        count: Int,
        seed: UInt64,
        categories: [String] = Categories.seedNames
    ) throws -> [String: Int] {
        guard let store = emulator.store(hub) else { return [:] }
        let compiled = try CompiledTemplate(body: seedTemplate.body)
        var rng = SplitMix64(seed: seed)
        var followers: [String: Int] = [:]
        for i in 0..<count {
            var tags: [String] = []
            // Each category with probability 1/2; a device follows at least one.
            let bits = rng.next()
            for (c, category) in categories.enumerated() where bits >> UInt64(c) & 1 == 1 { tags.append(category) }
            if tags.isEmpty { tags.append(categories[Int(bits >> 32) % categories.count]) }
            for tag in tags { followers[tag, default: 0] += 1 }
            tags.append("username:user\(i)")
            let registration = Registration(
                platform: .apple,
                handle: String(rng.next(), radix: 16),
                tags: tags,
                template: seedTemplate
            )
            store.upsertRegistration(registration, id: "sim-\(i)", compiled: compiled)
        }
        return followers
    }
}

/// A small, seedable generator so a simulated audience is reproducible.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
