import Logging
import NotificationHubs
import Synchronization

/// One warning per outage second rather than one per held send.
final class OutageLog: Sendable {
    private let lastWarning = Mutex<ContinuousClock.Instant?>(nil)

    func warn(_ logger: Logger, _ error: SendFailure) {
        let due = lastWarning.withLock { last -> Bool in
            let now = ContinuousClock.now
            guard last.map({ now - $0 >= .seconds(1) }) ?? true else { return false }
            last = now
            return true
        }
        if due {
            logger.warning("The hub does not answer: holding sends and retrying until it does",
                           metadata: ["reason": "\(error.reason)", "error": "\(error.message)"])
        }
    }
}
