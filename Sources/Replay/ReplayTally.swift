import Synchronization

/// The replay's counts and dry-run examples, shared by its preparer and sender and read by the
/// progress line.
final class ReplayTally: Sendable {
    private let counts = Mutex(ReplayCounts())
    private let examples = Mutex<[String]>([])
    let maxExamples: Int

    init(maxExamples: Int) {
        self.maxExamples = maxExamples
    }

    var result: ReplayCounts { counts.withLock { $0 } }
    var dryRunExamples: [String] { examples.withLock { $0 } }

    func count(_ update: (inout ReplayCounts) -> Void) {
        counts.withLock { update(&$0) }
    }

    func example(_ text: @autoclosure () -> String) {
        examples.withLock { list in
            if list.count < maxExamples { list.append(text()) }
        }
    }
}
