import COpenSSL

/// HMAC-SHA256 from OpenSSL's libcrypto.
enum HMAC {
    static func sha256(key: some Collection<UInt8>, message: some Collection<UInt8>) -> [UInt8] {
        let key = Array(key), message = Array(message)
        var out = [UInt8](repeating: 0, count: 32)
        let ok = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                out.withUnsafeMutableBufferPointer { o in
                    hubcast_hmac_sha256(k.baseAddress, k.count, m.baseAddress, m.count, o.baseAddress)
                }
            }
        }
        // Only an OpenSSL without SHA-256 fails here: a broken installation, not bad input.
        precondition(ok == 1, "OpenSSL HMAC-SHA256 is unavailable")
        return out
    }
}
