import HTTPTypes
import Hummingbird
import NIOCore

/// An answer other than success: a status and a message that is safe to show and to log
/// (it never quotes a password, token, handle or payload).
public struct APIError: Error, Sendable, CustomStringConvertible {
    public let status: HTTPResponse.Status
    public let message: String
    /// Extra headers: `WWW-Authenticate` on 401, `Retry-After` on 429.
    public var headers: HTTPFields = [:]

    public init(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    public var description: String { "\(status.code) \(message)" }

    static func badRequest(_ message: String) -> APIError { APIError(.badRequest, message) }
    static func forbidden(_ message: String) -> APIError { APIError(.forbidden, message) }
    /// The same answer for "does not exist" and "not yours to see": no oracle for which ids exist.
    static let notFound = APIError(.notFound, "not found")
    static func unavailable(_ message: String) -> APIError { APIError(.serviceUnavailable, message) }

    /// `{"error":"…"}` with the status and headers.
    var response: Response {
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        fields[.cacheControl] = "no-store"
        return Response(
            status: status,
            headers: fields,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: JSONText.object(["error": .string(message)])))
        )
    }
}

/// Turns every error into a JSON `{"error":…}` answer: the handlers' `APIError`s, Hummingbird's own
/// (unknown route, wrong method) and anything unexpected, which becomes a 500 without detail.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return error.response
        } catch let error as HTTPError {
            let message =
                switch error.status {
                case .notFound: "not found"
                case .methodNotAllowed: "method not allowed"
                case .contentTooLarge: "request body too large"
                default: error.status.reasonPhrase
                }
            return APIError(error.status, message, headers: error.headers).response
        } catch {
            context.logger.error("Request failed", metadata: ["error": "\(type(of: error))"])
            return APIError(.internalServerError, "internal error").response
        }
    }
}
