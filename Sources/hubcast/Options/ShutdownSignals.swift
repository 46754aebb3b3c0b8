import Logging
import ServiceLifecycle
import UnixSignals

/// SIGTERM and SIGINT, escalating: the first shuts the group down gracefully (drain, commit),
/// the second tells the pipeline to finish at once (finished work still committed), the third
/// cancels everything. ServiceGroup's own signal handling stops at the first.
enum ShutdownSignals {
    static func run(
        _ group: ServiceGroup,
        firstSignal: @escaping @Sendable () -> Void = {},
        secondSignal: @escaping @Sendable () -> Void,
        logger: Logger
    ) async throws {
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            let running = Task { try await group.run() }
            tasks.addTask {
                try await withTaskCancellationHandler {
                    try await running.value
                } onCancel: {
                    running.cancel()
                }
            }
            tasks.addTask {
                var count = 0
                for await signal in signals {
                    count += 1
                    switch count {
                    case 1:
                        logger.info("Signal received: draining", metadata: ["signal": "\(signal)"])
                        firstSignal()
                        await group.triggerGracefulShutdown()
                    case 2:
                        logger.warning(
                            "Second signal: finishing now; finished work is committed",
                            metadata: ["signal": "\(signal)"]
                        )
                        secondSignal()
                    default:
                        logger.warning("Third signal: cancelling", metadata: ["signal": "\(signal)"])
                        running.cancel()
                    }
                }
            }
            // The group ends the run; the signal watcher goes with it.
            try await tasks.next()
            tasks.cancelAll()
        }
    }
}
