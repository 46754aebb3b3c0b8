import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension Pipe {
    /// A pipe for one child's output whose ends no later child inherits.
    ///
    /// Foundation's pipes are inheritable and its `Process` leaves them open in the child: a child
    /// another test starts meanwhile holds the write end too, and this pipe's reader then sees no
    /// end of output until that child exits. A fresh clone's run lost a test that way: kcat, fed
    /// from such a pipe, waited a minute for an end of input that a sibling held back.
    /// (`Process` still gives the child its own copy: `dup2` onto 0, 1 or 2 clears the flag.)
    public static func unshared() -> Pipe {
        let pipe = Pipe()
        for descriptor in [pipe.fileHandleForReading.fileDescriptor, pipe.fileHandleForWriting.fileDescriptor] {
            _ = fcntl(descriptor, F_SETFD, fcntl(descriptor, F_GETFD) | FD_CLOEXEC)
        }
        return pipe
    }
}
