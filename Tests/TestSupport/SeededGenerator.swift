/// SplitMix64: a fixed seed gives the same cases on every run and machine, so a failure reproduces.
public struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A count from 0 up to `max` where small ones are common and large ones still occur.
    public mutating func logUniform(upTo max: Int) -> Int {
        let bits = Int.random(in: 0...(Int.bitWidth - max.leadingZeroBitCount), using: &self)
        return Int.random(in: 0...min(max, (1 << bits) - 1), using: &self)
    }
}
