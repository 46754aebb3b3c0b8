import Dispatch
import Foundation

/// Reads JSON lines from a file or stdin off the Swift thread pool, a chunk at a time.
public final class LineReader: @unchecked Sendable {
    /// One line with its 1-based number.
    public struct Line: Sendable {
        public let number: Int
        public let bytes: [UInt8]
    }

    private enum Source {
        case file(UnsafeMutablePointer<FILE>, owned: Bool)
        case memory([[UInt8]])
    }

    private let source: Source
    // Touched only on `queue`, so the reader's position needs no lock.
    private var lineNumber = 0
    private let queue = DispatchQueue(label: "hubcast.line-reader")

    /// `path` nil or "-" reads stdin.
    public init(path: String?) throws {
        if let path, path != "-" {
            guard let f = fopen(path, "r") else {
                throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path])
            }
            source = .file(f, owned: true)
        } else {
            guard let f = fdopen(STDIN_FILENO, "r") else { throw CocoaError(.fileReadUnknown) }
            source = .file(f, owned: false)
        }
    }

    /// Lines already in memory (an item built from flags).
    public init(lines: [[UInt8]]) {
        source = .memory(lines)
    }

    deinit {
        if case .file(let f, owned: true) = source { fclose(f) }
    }

    /// Up to `max` lines; empty at the end of input.
    public func next(max: Int = 1000) async -> [Line] {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.readChunk(max: max)) }
        }
    }

    private func readChunk(max: Int) -> [Line] {
        switch source {
        case .memory(let all):
            let chunk = all.dropFirst(lineNumber).prefix(max)
            defer { lineNumber += chunk.count }
            return chunk.enumerated().map { Line(number: lineNumber + $0.offset + 1, bytes: $0.element) }
        case .file(let file, _):
            var lines: [Line] = []
            var buffer: UnsafeMutablePointer<CChar>?
            var capacity = 0
            defer { free(buffer) }
            while lines.count < max {
                let n = getline(&buffer, &capacity, file)
                guard n >= 0, let buffer else { break }
                lineNumber += 1
                var length = n
                while length > 0, buffer[length - 1] == 0x0A || buffer[length - 1] == 0x0D { length -= 1 }
                lines.append(
                    Line(number: lineNumber, bytes: [UInt8](UnsafeRawBufferPointer(start: buffer, count: length)))
                )
            }
            return lines
        }
    }
}
