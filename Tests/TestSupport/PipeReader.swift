import Dispatch
import Foundation

/// Reads a pipe to its end on a dispatch thread: a blocking read inside a Swift task would hold
/// one of the few cooperative threads (two on a 2-core machine) and stall every other task.
public func readToEnd(_ handle: FileHandle) async -> Data {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: handle.readDataToEndOfFile()) }
    }
}
