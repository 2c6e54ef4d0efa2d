import Glibc

/// Why a socket operation failed. System failures keep the operation and the `errno` code, so that
/// callers can tell a port in use (`EADDRINUSE`) from a refused send (`ECONNREFUSED`).
public enum SocketError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A system call failed with `errno`.
    case system(operation: String, errno: Int32)
    /// The text is not an address this module understands (`host:port`, `[v6]:port`).
    case invalidAddress(String)
    /// The host name did not resolve (getaddrinfo's message).
    case unresolved(host: String, reason: String)
    /// The socket was closed before the call.
    case closed
    /// A packet had nowhere to go: no remote address is known yet.
    case noDestination

    public var description: String {
        switch self {
        case .system(let operation, let code):
            return "\(operation) failed: \(String(cString: strerror(code))) (errno \(code))"
        case .invalidAddress(let text): return "'\(text)' is not an address: use HOST:PORT, e.g. 127.0.0.1:5004 or [::1]:5004"
        case .unresolved(let host, let reason): return "cannot resolve '\(host)': \(reason)"
        case .closed: return "socket is closed"
        case .noDestination: return "no destination to send to yet"
        }
    }
}

/// Runs a system call, again while it is interrupted by a signal (EINTR); a failure becomes a
/// `SocketError.system` naming `operation`.
@discardableResult
func retryingInterrupts<T: BinaryInteger>(_ operation: String, _ call: () -> T) throws -> T {
    while true {
        let result = call()
        if result >= 0 { return result }
        let code = errno
        if code == EINTR { continue }
        throw SocketError.system(operation: operation, errno: code)
    }
}
