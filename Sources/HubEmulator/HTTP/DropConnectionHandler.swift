import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Closes the connection instead of writing a response marked for dropping: how the emulator
/// injects "connection reset" faults, which a handler cannot do from inside a route.
final class DropConnectionHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    static let marker = HTTPField.Name("x-hubcast-emulator-drop")!
    private var dropping = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        if case .head(let head) = part, head.headerFields[Self.marker] != nil {
            dropping = true
            context.close(promise: nil)
        }
        if dropping {
            promise?.fail(ChannelError.ioOnClosedChannel)
            if case .end = part { dropping = false }
            return
        }
        context.write(data, promise: promise)
    }
}
