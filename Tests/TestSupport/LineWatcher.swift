import Dispatch
import Foundation
import Synchronization

/// Reads a child's pipe line by line on a dispatch thread (never a cooperative one) and lets a
/// test wait for the line it expects, instead of sleeping and hoping.
public final class LineWatcher: Sendable {
    private struct Waiter {
        let matches: @Sendable (String) -> Bool
        let continuation: CheckedContinuation<String?, Never>
    }

    private struct State {
        var lines: [String] = []
        var partial = Data()
        var ended = false
        var waiters: [Int: Waiter] = [:]
        var nextID = 0
        var endWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    public init(_ handle: FileHandle) {
        DispatchQueue.global().async { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                take(chunk)
            }
            end()
        }
    }

    /// Everything read so far.
    public var text: String { state.withLock { s in (s.lines + [String(decoding: s.partial, as: UTF8.self)]).joined(separator: "\n") } }

    /// Waits for the pipe's end; returns everything it carried.
    public func all() async -> String {
        await withCheckedContinuation { continuation in
            let done = state.withLock { s -> Bool in
                if s.ended { return true }
                s.endWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
        return text
    }

    /// Waits for a line (already read or still to come) that matches; nil if the pipe ends first
    /// or the guard timeout passes.
    public func line(timeout: Duration = .seconds(120), where matches: @escaping @Sendable (String) -> Bool) async -> String? {
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
            let found = state.withLock { s -> String?? in
                if let line = s.lines.first(where: matches) { return .some(line) }
                if s.ended { return .some(nil) }
                s.waiters[id] = Waiter(matches: matches, continuation: continuation)
                return .none
            }
            if let found { continuation.resume(returning: found) }
        }
    }

    private func take(_ chunk: Data) {
        let woken = state.withLock { s -> [(CheckedContinuation<String?, Never>, String)] in
            s.partial.append(chunk)
            var woken: [(CheckedContinuation<String?, Never>, String)] = []
            while let newline = s.partial.firstIndex(of: 0x0A) {
                let line = String(decoding: s.partial[s.partial.startIndex..<newline], as: UTF8.self)
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
        let (waiters, endWaiters) = state.withLock { s in
            s.ended = true
            if !s.partial.isEmpty {
                s.lines.append(String(decoding: s.partial, as: UTF8.self))
                s.partial = Data()
            }
            defer {
                s.waiters.removeAll()
                s.endWaiters.removeAll()
            }
            return (Array(s.waiters.values), s.endWaiters)
        }
        for waiter in waiters { waiter.continuation.resume(returning: nil) }
        for waiter in endWaiters { waiter.resume() }
    }
}
