import CCurl
import Foundation
import Logging
import Synchronization
import Threads

/// Owns the curl multi handle and the thread that drives it; the only code that calls libcurl.
///
/// Unchecked: other threads touch only `inbox` (under `inboxLock`; it holds `Sendable` values
/// only), the atomics and `curl_multi_wakeup` (libcurl's one call documented as safe from any
/// thread); the multi handle, the transfers (active and idle) and the header lists belong to the
/// loop thread alone. Exercised by `ClientTests` under the thread sanitizer (200 concurrent sends,
/// cancellation mid-transfer and before the start, cancelAll of queued and started requests).
final class CurlEventLoop: @unchecked Sendable {
    private struct Inbox {
        var submitted: [Submission] = []
        var cancelled: [CancelRequest] = []
        /// Every transfer in flight is to be cancelled, and so are the first `cancelSubmitted` of
        /// `submitted` (those submitted before `cancelAll`).
        var cancelEverything = false
        var cancelSubmitted = 0
        var stopping = false
    }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_ALL)) }()

    private let multi: UnsafeMutableRawPointer
    private let configuration: TransportConfiguration
    private let logger: Logger
    // A pthread mutex (NSLock), not a Synchronization.Mutex: the thread sanitizer, which checks
    // this seam in CI (`make tsan`), does not see Mutex's contended path (a futex taken in the
    // kernel) and reports the inbox as a race under load.
    private let inboxLock = NSLock()
    private var inbox = Inbox()
    private let opened = Atomic<Int>(0)
    // `stop` joins it: once it returns, what was in flight has been failed.
    private let thread = JoinableThread(name: "hubcast-curl")
    private let stopped = Atomic<Bool>(false)
    // True while the loop thread is in (or about to enter) `curl_multi_poll`. A submitter wakes it
    // only then: the wake-up is a syscall and a context switch, which on every submit is one per send.
    private let polling = Atomic<Bool>(false)
    // Loop-thread state.
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    private var idle: [Transfer] = []
    private var headerLists = HeaderListCache()
    /// `keptResponseHeaders` as bytes, for the header callback.
    let keptHeaders: [[UInt8]]?

    init(configuration: TransportConfiguration, logger: Logger) {
        _ = Self.globalInit
        multi = curl_multi_init()!
        self.configuration = configuration
        self.logger = logger
        keptHeaders = configuration.keptResponseHeaders.map { $0.map { Array($0.lowercased().utf8) } }
        hubcast_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, configuration.maxConnectionsPerHost)
        hubcast_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, configuration.maxConnectionsPerHost)
        // Without its thread no request would ever be answered: out of threads, stop here.
        precondition(thread.start { [self] in run() }, "the system refused the HTTP transport a thread")
    }

    var connectionsOpened: Int { opened.load(ordering: .relaxed) }

    func submit(_ submission: Submission) {
        let accepted = inboxLock.withLock {
            guard !inbox.stopping else { return false }
            inbox.submitted.append(submission)
            return true
        }
        guard accepted else {
            submission.completion(
                .failure(TransportError(kind: .shutDown, code: 0, message: "the HTTP transport is shut down"))
            )
            return
        }
        wakeIfPolling()
    }

    /// Cancels the request submitted with `request`, whether or not the loop has started it yet.
    func cancel(_ request: CancelRequest) {
        request.requested.store(true, ordering: .releasing)
        inboxLock.withLock { inbox.cancelled.append(request) }
        wakeIfPolling()
    }

    /// Ends every transfer submitted so far as cancelled (those submitted later go ahead).
    func cancelAll() {
        inboxLock.withLock {
            inbox.cancelEverything = true
            inbox.cancelSubmitted = inbox.submitted.count
        }
        wakeIfPolling()
    }

    /// Fails what is in flight and returns once the loop thread has ended. Called on the loop
    /// thread itself (a completion let go of the transport), it returns at once, and the loop
    /// fails what is in flight as soon as that completion returns.
    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        inboxLock.withLock { inbox.stopping = true }
        curl_multi_wakeup(multi)
        thread.join()
    }

    // Called after the inbox changed. The loop sets `polling` before it looks at the inbox a last
    // time, so either it sees the new entry or this sees `polling` (both sequentially consistent).
    private func wakeIfPolling() {
        if polling.load(ordering: .sequentiallyConsistent) { curl_multi_wakeup(multi) }
    }

    private func run() {
        // Swapped with the inbox's arrays, so neither side allocates once both have grown.
        var submitted: [Submission] = []
        var cancelled: [CancelRequest] = []
        while true {
            let (stopping, cancelEverything, cancelSubmitted) = inboxLock.withLock {
                swap(&submitted, &inbox.submitted)
                swap(&cancelled, &inbox.cancelled)
                defer {
                    inbox.cancelEverything = false
                    inbox.cancelSubmitted = 0
                }
                return (inbox.stopping, inbox.cancelEverything, inbox.cancelSubmitted)
            }
            if cancelEverything {
                for easy in Array(active.keys) { complete(easy, with: .failure(Self.cancelledError)) }
            }
            for (index, submission) in submitted.enumerated() {
                if index < cancelSubmitted || submission.cancel?.requested.load(ordering: .acquiring) == true {
                    submission.completion(.failure(Self.cancelledError))
                } else {
                    start(submission)
                }
            }
            // A scan, not an index: cancelling one request is rare (its task was cancelled), and
            // an index would be kept up on every send.
            for request in cancelled {
                guard let transfer = active.values.first(where: { $0.submission?.cancel === request }) else { continue }
                complete(transfer.easy, with: .failure(Self.cancelledError))
            }
            submitted.removeAll(keepingCapacity: true)
            cancelled.removeAll(keepingCapacity: true)
            if stopping { break }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            readCompletions()
            polling.store(true, ordering: .sequentiallyConsistent)
            if inboxLock.withLock({
                inbox.submitted.isEmpty && inbox.cancelled.isEmpty && !inbox.stopping && !inbox.cancelEverything
            }) {
                curl_multi_poll(multi, nil, 0, 1000, nil)
            }
            polling.store(false, ordering: .sequentiallyConsistent)
        }
        for (easy, _) in active {
            complete(
                easy,
                with: .failure(TransportError(kind: .shutDown, code: 0, message: "the HTTP transport shut down"))
            )
        }
        for transfer in idle { curl_easy_cleanup(transfer.easy) }
        idle.removeAll()
        headerLists.freeAll()
    }

    // Not on the loop thread as it exits: a submitter that saw `polling` just before may still be
    // about to call `curl_multi_wakeup`, and so may `stop` after it unlocks the inbox. Whoever
    // calls either holds this object, so here nobody can.
    deinit { curl_multi_cleanup(multi) }

    private static let cancelledError = TransportError(
        kind: .cancelled,
        code: Int32(CURLE_ABORTED_BY_CALLBACK.rawValue),
        message: "the request was cancelled"
    )

    /// A new handle with the options every request shares, and its transfer; a handle is reused
    /// without `curl_easy_reset`, which would throw these away and have them set again on every request.
    private func makeTransfer() -> Transfer? {
        guard let easy = curl_easy_init() else { return nil }
        let transfer = Transfer(easy: easy, keptHeaders: keptHeaders)
        // Unretained: `active` or `idle` holds the transfer for as long as its handle lives.
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        hubcast_curl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
        hubcast_curl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
        hubcast_curl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout.milliseconds))
        hubcast_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        hubcast_curl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1)
        // HTTP/1.1 even where the server offers HTTP/2 (as the hub does): with the system's libcurl
        // (7.88) a request over HTTP/2 costs more CPU than over a kept-alive HTTP/1.1 connection,
        // and a stream the server resets after its answer (as nginx does to a body it did not read)
        // ends in an error although the answer came, so an accepted send would be sent again.
        hubcast_curl_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
        hubcast_curl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, configuration.insecure ? 0 : 1)
        hubcast_curl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, configuration.insecure ? 0 : 2)
        if let caFile = configuration.caFile { hubcast_curl_easy_setopt_pointer(easy, CURLOPT_CAINFO, caFile) }
        hubcast_curl_easy_setopt_write_callback(easy, CURLOPT_WRITEFUNCTION, curlWriteBody)
        hubcast_curl_easy_setopt_write_callback(easy, CURLOPT_HEADERFUNCTION, curlWriteHeader)
        return transfer
    }

    private func start(_ submission: Submission) {
        guard let transfer = idle.popLast() ?? makeTransfer() else {
            submission.completion(
                .failure(TransportError(kind: .other, code: 0, message: "libcurl could not create a handle"))
            )
            return
        }
        let easy = transfer.easy
        let request = submission.request
        hubcast_curl_easy_setopt_pointer(easy, CURLOPT_URL, request.url)
        // What the previous request on this handle set differently: its method.
        hubcast_curl_easy_setopt_pointer(easy, CURLOPT_CUSTOMREQUEST, nil)
        switch request.method {
        case .get: hubcast_curl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1)
        case .delete:
            hubcast_curl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1)
            hubcast_curl_easy_setopt_pointer(easy, CURLOPT_CUSTOMREQUEST, "DELETE")
        case .post, .put, .patch:
            let body = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, request.body.count), alignment: 1)
            request.body.withUnsafeBytes { body.copyMemory(from: $0) }
            transfer.body = body
            hubcast_curl_easy_setopt_long(easy, CURLOPT_POST, 1)
            hubcast_curl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count))
            hubcast_curl_easy_setopt_pointer(easy, CURLOPT_POSTFIELDS, body.baseAddress)
            if request.method != .post {
                hubcast_curl_easy_setopt_pointer(easy, CURLOPT_CUSTOMREQUEST, request.method.rawValue)
            }
        }
        let list = headerLists.take(request.headers)
        transfer.headerList = list
        hubcast_curl_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, list.pointer)
        hubcast_curl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(request.timeout.milliseconds))
        transfer.submission = submission
        transfer.started = .now
        active[easy] = transfer
        curl_multi_add_handle(multi, easy)
    }

    private func readCompletions() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            var connects = 0
            hubcast_curl_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
            opened.add(connects, ordering: .relaxed)
            guard let transfer = active[easy] else { continue }
            if code == CURLE_OK {
                var status = 0
                hubcast_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
                let response = HTTPResponse(
                    status: status,
                    headers: transfer.responseHeaders,
                    body: transfer.responseBody,
                    elapsed: ContinuousClock.now - transfer.started
                )
                complete(easy, with: .success(response))
            } else {
                complete(easy, with: .failure(Self.error(code)))
            }
        }
    }

    private func complete(_ easy: UnsafeMutableRawPointer, with result: Result<HTTPResponse, TransportError>) {
        curl_multi_remove_handle(multi, easy)
        guard let transfer = active.removeValue(forKey: easy) else { return }
        if let list = transfer.headerList { headerLists.release(list) }
        let completion = transfer.end()
        // The handle goes back to the pool, keeping its options; its connection stays in the
        // multi handle's cache. It may still point at the freed body copy and at a header list the
        // cache may free: libcurl reads neither while the handle is idle, and the next request
        // sets URL, method, body and headers before it starts.
        idle.append(transfer)
        completion?(result)
    }

    private static func error(_ code: CURLcode) -> TransportError {
        let message = String(cString: curl_easy_strerror(code))
        let kind: TransportError.Kind =
            switch code {
            case CURLE_OPERATION_TIMEDOUT: .timeout
            case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM,
                CURLE_SSL_CACERT_BADFILE:
                .tls
            case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_RECV_ERROR, CURLE_SEND_ERROR,
                CURLE_GOT_NOTHING:
                .connection
            default: .other
            }
        return TransportError(kind: kind, code: Int32(code.rawValue), message: message)
    }
}

/// An easy handle and the request it carries, reused with the handle from request to request. The
/// loop thread alone touches it, and libcurl's callbacks on that thread, through the handle's data
/// pointer.
final class Transfer {
    let easy: UnsafeMutableRawPointer
    /// Lower-case names of the response headers to keep; nil: all.
    let keptHeaders: [[UInt8]]?
    /// The request in flight; nil while the handle is idle.
    var submission: Submission?
    /// The loop's cached list of this request's headers, released when the transfer completes.
    var headerList: HeaderListCache.List?
    var body: UnsafeMutableRawBufferPointer?
    var responseBody: [UInt8] = []
    var responseHeaders: [HTTPHeader] = []
    var started: ContinuousClock.Instant = .now

    init(easy: UnsafeMutableRawPointer, keptHeaders: [[UInt8]]?) {
        self.easy = easy
        self.keptHeaders = keptHeaders
    }

    /// True if the header called `name` (any case) is kept.
    func keeps(_ name: UnsafeRawBufferPointer) -> Bool {
        guard let keptHeaders else { return true }
        return keptHeaders.contains { kept in
            kept.count == name.count
                && zip(kept, name).allSatisfy { k, b in k == (b >= 0x41 && b <= 0x5A ? b + 0x20 : b) }
        }
    }

    /// Frees the body copy libcurl was pointed at, readies the transfer for its handle's next
    /// request and returns the completion to call, which only this request's end gets.
    func end() -> (@Sendable (Result<HTTPResponse, TransportError>) -> Void)? {
        body?.deallocate()
        body = nil
        headerList = nil
        responseBody = []
        responseHeaders = []
        defer { submission = nil }
        return submission?.completion
    }
}

/// libcurl header lists by the headers they hold, on the loop thread. Every send to a hub has the
/// same headers but for its tag expression, and the token changes hourly: building the list again
/// for each was two allocations per header plus the formatted line's, and as many frees.
struct HeaderListCache {
    /// One list; `users` counts the transfers it is set on, which it must outlive.
    final class List {
        let pointer: UnsafeMutablePointer<curl_slist>?
        var users = 0
        init(pointer: UnsafeMutablePointer<curl_slist>?) { self.pointer = pointer }
    }

    private var lists: [[HTTPHeader]: List] = [:]
    /// Lists kept; past it, the unused ones are freed (other requests than sends vary their headers).
    let capacity: Int

    init(capacity: Int = 64) { self.capacity = capacity }

    var count: Int { lists.count }

    mutating func take(_ headers: [HTTPHeader]) -> List {
        if let list = lists[headers] {
            list.users += 1
            return list
        }
        if lists.count >= capacity { evictUnused() }
        var pointer: UnsafeMutablePointer<curl_slist>?
        for header in headers { pointer = curl_slist_append(pointer, "\(header.name): \(header.value)") }
        // No `Expect: 100-continue` round trip on larger bodies.
        pointer = curl_slist_append(pointer, "Expect:")
        let list = List(pointer: pointer)
        list.users = 1
        lists[headers] = list
        return list
    }

    func release(_ list: List) { list.users -= 1 }

    private mutating func evictUnused() {
        for (key, list) in lists where list.users == 0 {
            curl_slist_free_all(list.pointer)
            lists[key] = nil
        }
    }

    mutating func freeAll() {
        for list in lists.values { curl_slist_free_all(list.pointer) }
        lists = [:]
    }
}

private func curlWriteBody(
    _ data: UnsafeMutablePointer<CChar>?,
    _ size: Int,
    _ count: Int,
    _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    transfer.responseBody.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size * count))
    return size * count
}

private func curlWriteHeader(
    _ data: UnsafeMutablePointer<CChar>?,
    _ size: Int,
    _ count: Int,
    _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let line = UnsafeRawBufferPointer(start: data, count: size * count)
    if line.starts(with: "HTTP/".utf8) {
        // A new status line (after 100 Continue or a redirect): earlier headers were not this response's.
        transfer.responseHeaders.removeAll()
    } else if let colon = line.firstIndex(of: UInt8(ascii: ":")),
        transfer.keeps(UnsafeRawBufferPointer(rebasing: line[..<colon]))
    {
        // Bytes, not Unicode scalars: this runs for every header of every response.
        var start = colon + 1
        var end = line.count
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        while end > start,
            line[end - 1] == 0x20 || line[end - 1] == 0x09 || line[end - 1] == 0x0D || line[end - 1] == 0x0A
        { end -= 1 }
        let name = String(unsafeUninitializedCapacity: colon) { buffer in
            for i in 0..<colon {
                let b = line[i]
                buffer[i] = b >= 0x41 && b <= 0x5A ? b + 0x20 : b
            }
            return colon
        }
        transfer.responseHeaders.append(
            HTTPHeader(name, String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<end]), as: UTF8.self))
        )
    }
    return size * count
}

extension Duration {
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}
