import Foundation
import NIOConcurrencyHelpers

/// A thread of its own for a blocking C loop (libcurl's, librdkafka's poll), whose end can be
/// waited for. Foundation's `Thread` has no join, so an owner that must not free a C handle under
/// its loop waited on a semaphore the loop signalled last; `join` is that wait, from POSIX.
///
/// Ours, not a package's: the server packages at hand keep their threads to themselves (NIO's are
/// event loops, not a thread for a body of our own).
public final class JoinableThread: Sendable {
    private enum State: Sendable {
        case notStarted
        case running(pthread_t)
        case joined
    }

    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    /// Held through `pthread_join`, so that a second joiner waits for the first. NIO's lock, a
    /// pthread mutex, not `Synchronization.Mutex`: the thread sanitizer does not see the latter's
    /// contended path (a futex), and a second joiner is exactly that.
    private let state = NIOLockedValueBox(State.notStarted)
    let name: String

    /// `name` is shown by `top -H` and in debuggers: its first 15 bytes (Linux refuses a longer
    /// name altogether).
    public init(name: String) {
        var short = ""
        // Whole characters: a cut inside one would not be valid UTF-8.
        for character in name {
            guard short.utf8.count + character.utf8.count <= 15 else { break }
            short.append(character)
        }
        self.name = short
    }

    /// Runs `body` on the new thread; once only (a second call does nothing). False if the
    /// system refused a thread.
    @discardableResult
    public func start(_ body: @escaping @Sendable () -> Void) -> Bool {
        state.withLockedValue { state in
            guard case .notStarted = state else { return false }
            let name = self.name
            let context = Unmanaged.passRetained(
                Body {
                    // Foundation names the thread it runs on (Glibc's module does not export
                    // `pthread_setname_np`).
                    Thread.current.name = name
                    body()
                }
            ).toOpaque()
            var thread = pthread_t()
            let created = pthread_create(
                &thread,
                nil,
                { context in
                    // Non-nil: `start` passes its box. A nil would be a bug in this file.
                    guard let context else { return nil }
                    Unmanaged<Body>.fromOpaque(context).takeRetainedValue().run()
                    return nil
                },
                context
            )
            guard created == 0 else {
                Unmanaged<Body>.fromOpaque(context).release()
                return false
            }
            state = .running(thread)
            return true
        }
    }

    /// Returns once the body has returned (at once if it never started or was joined before).
    /// Blocks: call it from a thread that may block. Called on the thread itself (its body let
    /// go of the last reference to an owner that joins in `deinit`), it cannot wait for its own
    /// end: it returns at once, and the thread's resources go when it ends.
    public func join() {
        state.withLockedValue { state in
            guard case .running(let thread) = state else { return }
            if pthread_equal(thread, pthread_self()) != 0 {
                pthread_detach(thread)
            } else {
                pthread_join(thread, nil)
            }
            state = .joined
        }
    }

    deinit {
        // Never joined: its resources go when it ends. The last owner may be the thread itself.
        if case .running(let thread) = state.withLockedValue({ $0 }) { pthread_detach(thread) }
    }
}
