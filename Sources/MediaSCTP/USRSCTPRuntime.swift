import CUsrSCTP
import Glibc
import MediaCore

/// The one usrsctp instance of the process, started without threads on first use and kept.
///
/// usrsctp is a global stack behind one lock of its own; its callbacks (`connOutput`, `receive`) run
/// synchronously inside the call that caused them (`usrsctp_conninput`, `usrsctp_sendv`,
/// `usrsctp_handle_timers`, `usrsctp_close`). Every call into usrsctp is made under `lock`, so the callbacks
/// find the endpoints' queues with the lock already held by their own thread, and append to them.
///
/// Associations are named to usrsctp by a number (the AF_CONN address and the socket's ulp_info), not by a
/// pointer, and found in `endpoints`: a packet usrsctp emits after an association was closed and removed
/// (its ABORT, a late timer) finds nothing and is dropped, never a freed object.
///
/// usrsctp's timers run on the monotonic clock (it reads the real clock for round-trip times too):
/// `tick()` hands it the milliseconds passed since the last call, whichever association called.
enum USRSCTP {
    static let lock = ConditionLock()
    nonisolated(unsafe) private static var started = false
    nonisolated(unsafe) private static var nextID = 1
    nonisolated(unsafe) private static var lastTick: Int64 = 0
    nonisolated(unsafe) static var endpoints: [Int: SCTPEndpoint] = [:]

    /// Starts usrsctp if needed and registers a new endpoint; with the lock held.
    static func register() -> SCTPEndpoint {
        if !started {
            started = true
            // No local UDP encapsulation port (0): packets go only through connOutput.
            usrsctp_init_nothreads(0, connOutput, nil)
            // RFC 8831 §6.2: no ECN (the transport below is DTLS over UDP); partial reliability on.
            usrsctp_sysctl_set_sctp_ecn_enable(0)
            usrsctp_sysctl_set_sctp_pr_enable(1)
            lastTick = monotonicMilliseconds()
        }
        let endpoint = SCTPEndpoint(id: nextID)
        nextID += 1
        endpoints[endpoint.id] = endpoint
        usrsctp_register_address(endpoint.address)
        return endpoint
    }

    /// Forgets an endpoint whose socket is closed; with the lock held.
    static func deregister(_ endpoint: SCTPEndpoint) {
        usrsctp_deregister_address(endpoint.address)
        endpoints[endpoint.id] = nil
    }

    /// Runs usrsctp's timers up to the present; with the lock held.
    static func tick() {
        let now = monotonicMilliseconds()
        let elapsed = now - lastTick
        guard elapsed > 0 else { return }
        lastTick = now
        usrsctp_handle_timers(UInt32(clamping: elapsed))
    }

    private static func monotonicMilliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }
}

/// What usrsctp handed an association through its callbacks, waiting for the association to read it.
/// Touched only with `USRSCTP.lock` held.
final class SCTPEndpoint {
    enum Inbound {
        /// A piece of a user message; the last piece has `endOfRecord`.
        case data([UInt8], stream: UInt16, ppid: UInt32, unordered: Bool, endOfRecord: Bool)
        case notification([UInt8])
        /// The socket has nothing more to read (association gone).
        case endOfFile
    }

    let id: Int
    var transmits: [[UInt8]] = []
    var inbound: [Inbound] = []

    init(id: Int) { self.id = id }

    /// The AF_CONN address usrsctp knows the endpoint by: its number, as a pointer that is never followed.
    var address: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: id)! }
}

/// usrsctp's packet output: an SCTP packet for the association registered at `address`.
private let connOutput: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int, UInt8, UInt8) -> Int32 = {
    address, buffer, length, _, _ in
    guard let buffer, let endpoint = USRSCTP.endpoints[Int(bitPattern: address)] else { return 0 }
    endpoint.transmits.append(Array(UnsafeRawBufferPointer(start: buffer, count: length)))
    return 0
}

/// Message flags of the receive callback (Linux values, which usrsctp uses).
private let messageEndOfRecord: Int32 = 0x80
private let messageNotification: Int32 = 0x2000

/// usrsctp's receive callback: a message piece or a notification in a buffer the callee frees.
let sctpReceive: @convention(c) (OpaquePointer?, sctp_sockstore, UnsafeMutableRawPointer?, Int, sctp_rcvinfo, Int32,
                                 UnsafeMutableRawPointer?) -> Int32 = { _, _, data, length, info, flags, ulp in
    defer { free(data) }
    guard let endpoint = USRSCTP.endpoints[Int(bitPattern: ulp)] else { return 1 }
    guard let data else {
        endpoint.inbound.append(.endOfFile)
        return 1
    }
    let bytes = Array(UnsafeRawBufferPointer(start: data, count: length))
    if flags & messageNotification != 0 {
        endpoint.inbound.append(.notification(bytes))
    } else {
        endpoint.inbound.append(.data(bytes, stream: info.rcv_sid, ppid: UInt32(bigEndian: info.rcv_ppid),
                                      unordered: Int32(info.rcv_flags) & SCTP_UNORDERED != 0,
                                      endOfRecord: flags & messageEndOfRecord != 0))
    }
    return 1
}
