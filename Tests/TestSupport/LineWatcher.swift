import Dispatch
import Foundation
import Synchronization

/// Reads a child's pipe line by line on a dispatch thread (never a cooperative one), keeps each
/// line with the instant it arrived, and lets a test wait for the line it expects instead of
/// sleeping and hoping.
public final class LineWatcher: Sendable {
    public struct Line: Sendable {
        public let at: ContinuousClock.Instant
        public let text: String
    }

    private struct Waiter {
        let matches: @Sendable (Line) -> Bool
        let continuation: CheckedContinuation<Line?, Never>
    }

    private struct State {
        var lines: [Line] = []
        var partial = Data()
        var ended = false
        var waiters: [Int: Waiter] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())

    public init(_ handle: FileHandle) {
        DispatchQueue.global().async { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                take(chunk, at: .now)
            }
            end()
        }
    }

    /// Every line read so far.
    public var lines: [Line] { state.withLock { $0.lines } }

    /// True once the pipe ended (its writer exited).
    public var ended: Bool { state.withLock { $0.ended } }

    /// Everything read so far.
    public var text: String {
        state.withLock { s in
            (s.lines.map(\.text) + [String(decoding: s.partial, as: UTF8.self)]).joined(separator: "\n")
        }
    }

    /// Waits for the pipe's end (at most `timeout`, a guard); returns everything it carried.
    public func all(timeout: Duration = .seconds(600)) async -> String {
        _ = await untilEnd(timeout: timeout)
        return text
    }

    /// Waits for the pipe's end; false if `timeout` passed first.
    public func untilEnd(timeout: Duration) async -> Bool {
        _ = await first(timeout: timeout) { _ in false }
        return ended
    }

    /// Waits for a line (already read or still to come) that matches; nil if the pipe ends first
    /// or the guard timeout passes.
    public func first(
        timeout: Duration = .seconds(120),
        where matches: @escaping @Sendable (Line) -> Bool
    ) async -> Line? {
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        let guardTask = Task {
            try? await Task.sleep(for: timeout)
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume(returning: nil)
        }
        defer { guardTask.cancel() }
        return await withCheckedContinuation { continuation in
            let found = state.withLock { s -> Line?? in
                if let line = s.lines.first(where: matches) { return .some(line) }
                if s.ended { return .some(nil) }
                s.waiters[id] = Waiter(matches: matches, continuation: continuation)
                return .none
            }
            if let found { continuation.resume(returning: found) }
        }
    }

    /// Waits for the `n`th line that matches, counting the lines already read; see `first(timeout:where:)`.
    public func nth(
        _ n: Int,
        timeout: Duration = .seconds(120),
        where matches: @escaping @Sendable (String) -> Bool
    ) async -> Line? {
        let seen = MatchCount()
        return await first(timeout: timeout) { line in
            matches(line.text) && seen.value.add(1, ordering: .relaxed).newValue >= n
        }
    }

    private final class MatchCount: Sendable {
        let value = Atomic<Int>(0)
    }

    /// The text of the first line that matches; see `first(timeout:where:)`.
    public func line(
        timeout: Duration = .seconds(120),
        where matches: @escaping @Sendable (String) -> Bool
    ) async -> String? {
        await first(timeout: timeout) { matches($0.text) }?.text
    }

    private func take(_ chunk: Data, at instant: ContinuousClock.Instant) {
        let woken = state.withLock { s -> [(CheckedContinuation<Line?, Never>, Line)] in
            s.partial.append(chunk)
            var woken: [(CheckedContinuation<Line?, Never>, Line)] = []
            while let newline = s.partial.firstIndex(of: 0x0A) {
                let line = Line(
                    at: instant,
                    text: String(decoding: s.partial[s.partial.startIndex..<newline], as: UTF8.self)
                )
                s.partial = Data(s.partial[s.partial.index(after: newline)...])
                s.lines.append(line)
                for (id, waiter) in s.waiters where waiter.matches(line) {
                    s.waiters[id] = nil
                    woken.append((waiter.continuation, line))
                }
            }
            return woken
        }
        for (continuation, line) in woken { continuation.resume(returning: line) }
    }

    private func end() {
        let waiters = state.withLock { s in
            s.ended = true
            if !s.partial.isEmpty {
                s.lines.append(Line(at: .now, text: String(decoding: s.partial, as: UTF8.self)))
                s.partial = Data()
            }
            defer { s.waiters.removeAll() }
            return Array(s.waiters.values)
        }
        // A line waited for that came with the end still counts.
        for waiter in waiters { waiter.continuation.resume(returning: lines.first(where: waiter.matches)) }
    }
}
