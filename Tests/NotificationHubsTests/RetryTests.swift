import Testing

@testable import NotificationHubs

@Suite struct RetryPolicyTests {
    @Test func fullJitterScheduleIsExact() {
        let policy = RetryPolicy(maxAttempts: 8, baseDelay: .seconds(1), maxDelay: .seconds(10))
        #expect(policy.delay(after: 1, retryAfter: nil, unit: 0.5) == .milliseconds(500))
        #expect(policy.delay(after: 2, retryAfter: nil, unit: 0.5) == .seconds(1))
        #expect(policy.delay(after: 3, retryAfter: nil, unit: 0.25) == .seconds(1))
        #expect(policy.delay(after: 4, retryAfter: nil, unit: 0.999) == .milliseconds(7992))
        // Capped at maxDelay.
        #expect(policy.delay(after: 9, retryAfter: nil, unit: 0.5) == .seconds(5))
        #expect(policy.delay(after: 1, retryAfter: nil, unit: 0) == .zero)
        // Retry-After replaces the draw, up to maxRetryAfter.
        #expect(policy.delay(after: 1, retryAfter: .seconds(7), unit: 0.9) == .seconds(7))
        #expect(policy.delay(after: 1, retryAfter: .seconds(900), unit: 0.9) == .seconds(300))
    }

    @Test func retryAfterInSecondsAndHTTPDate() {
        #expect(RetryAfter.parse("1", nowEpochSeconds: 0) == .seconds(1))
        #expect(RetryAfter.parse(" 30 ", nowEpochSeconds: 0) == .seconds(30))
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", nowEpochSeconds: 784_111_770) == .seconds(7))
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", nowEpochSeconds: 784_111_800) == .zero)
        #expect(RetryAfter.parse("soon", nowEpochSeconds: 0) == nil)
        #expect(RetryAfter.parse("-1", nowEpochSeconds: 0) == nil)
    }

    @Test func classificationFollowsNotificationHubs() {
        let quota = Array(
            "<Error><Code>403</Code><Detail>The amount of sends exceeded the QuotaExceeded limit</Detail></Error>".utf8
        )
        #expect(SendOutcome.classify(status: 201, retryAfter: nil, body: []) == .success)
        #expect(SendOutcome.classify(status: 429, retryAfter: "1", body: []) == .retry(.throttled))
        #expect(SendOutcome.classify(status: 403, retryAfter: nil, body: quota) == .retry(.throttled))
        #expect(SendOutcome.classify(status: 403, retryAfter: "5", body: []) == .retry(.throttled))
        #expect(
            SendOutcome.classify(status: 403, retryAfter: nil, body: Array("Unauthorized access: no Send claim".utf8))
                == .final(.forbidden)
        )
        #expect(SendOutcome.classify(status: 401, retryAfter: nil, body: []) == .refreshTokenAndRetry)
        #expect(SendOutcome.classify(status: 408, retryAfter: nil, body: []) == .retry(.timeout))
        for status in [500, 503, 504] {
            #expect(SendOutcome.classify(status: status, retryAfter: nil, body: []) == .retry(.serverError))
        }
        #expect(SendOutcome.classify(status: 400, retryAfter: nil, body: []) == .final(.badRequest))
        #expect(SendOutcome.classify(status: 404, retryAfter: nil, body: []) == .final(.notFound))
        #expect(SendOutcome.classify(status: 410, retryAfter: nil, body: []) == .final(.gone))
        #expect(SendOutcome.classify(status: 413, retryAfter: nil, body: []) == .final(.tooLarge))
    }
}
