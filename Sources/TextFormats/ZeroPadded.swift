extension String {
    /// `value`'s digits in `radix`, with zeros in front up to `width` (timestamps, fixed decimals,
    /// code points).
    init(zeroPadded value: some BinaryInteger, width: Int, radix: Int = 10, uppercase: Bool = false) {
        let digits = String(value, radix: radix, uppercase: uppercase)
        self = String(repeating: "0", count: Swift.max(0, width - digits.count)) + digits
    }
}
