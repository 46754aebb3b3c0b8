import Dispatch
import Foundation
import Synchronization

/// Reads JSON lines from a file or stdin off the Swift thread pool, a chunk at a time.
public final class LineReader: Sendable {
    /// One line with its 1-based number.
    public struct Line: Sendable {
        public let number: Int
        public let bytes: [UInt8]
    }

    private enum Source {
        case file(UnsafeMutablePointer<FILE>, owned: Bool)
        case memory([[UInt8]])
    }

    private struct State {
        let source: Source
        var lineNumber = 0
    }

    // Read only on `queue`, one chunk at a time: the lock is never contended, it tells the
    // compiler what the queue already ensures (and owns the FILE pointer).
    private let state: Mutex<State>
    private let queue = DispatchQueue(label: "hubcast.line-reader")

    /// `path` nil or "-" reads stdin.
    public init(path: String?) throws {
        if let path, path != "-" {
            guard let f = fopen(path, "r") else {
                throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path])
            }
            state = Mutex(State(source: .file(f, owned: true)))
        } else {
            guard let f = fdopen(STDIN_FILENO, "r") else { throw CocoaError(.fileReadUnknown) }
            state = Mutex(State(source: .file(f, owned: false)))
        }
    }

    /// Lines already in memory (an item built from flags).
    public init(lines: [[UInt8]]) {
        state = Mutex(State(source: .memory(lines)))
    }

    deinit {
        state.withLock { if case .file(let f, owned: true) = $0.source { fclose(f) } }
    }

    /// Up to `max` lines; empty at the end of input.
    public func next(max: Int = 1000) async -> [Line] {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.state.withLock { Self.readChunk(max: max, from: &$0) }) }
        }
    }

    private static func readChunk(max: Int, from state: inout State) -> [Line] {
        switch state.source {
        case .memory(let all):
            let first = state.lineNumber
            let chunk = all.dropFirst(first).prefix(max)
            state.lineNumber += chunk.count
            return chunk.enumerated().map { Line(number: first + $0.offset + 1, bytes: $0.element) }
        case .file(let file, _):
            var lines: [Line] = []
            var buffer: UnsafeMutablePointer<CChar>?
            var capacity = 0
            defer { free(buffer) }
            while lines.count < max {
                let n = getline(&buffer, &capacity, file)
                guard n >= 0, let buffer else { break }
                state.lineNumber += 1
                var length = n
                while length > 0, buffer[length - 1] == 0x0A || buffer[length - 1] == 0x0D { length -= 1 }
                lines.append(
                    Line(number: state.lineNumber, bytes: [UInt8](UnsafeRawBufferPointer(start: buffer, count: length)))
                )
            }
            return lines
        }
    }
}
