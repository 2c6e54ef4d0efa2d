import MediaCore
import MediaRTP
import MediaSRTP

/// The sockets of one RTP session: RTP and RTCP on one port (RFC 5761), or RTCP on a port of its
/// own, by default the RTP port + 1 (RFC 3550 §11).
public final class RTPSessionSockets: @unchecked Sendable {
    public let rtp: UDPSocket
    /// The RTCP socket; the RTP socket itself when RTP and RTCP share a port.
    public let rtcp: UDPSocket

    /// Binds the session's sockets at `local`: one socket when `multiplexed`, else a second one for
    /// RTCP at `rtcpPort` (default: the port after the RTP port's). When the RTP port is 0 the kernel
    /// chooses it, and RTCP still takes the port after it (a few tries, then any port): a peer that
    /// learns where to send RTCP from where RTP comes from (RFC 3550 §11, symmetric RTP of RFC 4961)
    /// then reaches it with its very first report, not only after the first sender report shows
    /// the real port a second later. A late joiner's first report asks for its keyframe.
    public init(local: SocketAddress, multiplexed: Bool, rtcpPort: UInt16? = nil) throws {
        if multiplexed {
            rtp = try UDPSocket(bindingTo: local)
            rtcp = rtp
            return
        }
        if local.port == 0 && rtcpPort == nil {
            for _ in 0..<16 {
                let candidate = try UDPSocket(bindingTo: local)
                let next = candidate.localAddress.port
                if next < UInt16.max, let pair = try? UDPSocket(bindingTo: local.withPort(next + 1)) {
                    (rtp, rtcp) = (candidate, pair)
                    return
                }
                candidate.close()
            }
        }
        rtp = try UDPSocket(bindingTo: local)
        let address = local.withPort(rtcpPort ?? (local.port == 0 ? 0 : local.port &+ 1))
        do { rtcp = try UDPSocket(bindingTo: address) } catch { rtp.close(); throw error }
    }

    public var isMultiplexed: Bool { rtp === rtcp }

    public func close() {
        rtp.close()
        if !isMultiplexed { rtcp.close() }
    }

    /// Sends `packets` as one compound RTCP packet (RFC 3550 §6.1) from the RTCP socket, as SRTCP
    /// when `protection` is given (RFC 3711 §3.4). RTCP is a few packets a second: the datagram is
    /// built in a fresh array.
    public func sendRTCP(_ packets: [RTCPPacket], to destination: SocketAddress, protection: SRTPSession? = nil) throws {
        let compound = RTCPCompoundPacket(packets)
        var bytes = [UInt8](repeating: 0, count: compound.marshalSize + (protection?.rtcpOverhead ?? 0))
        let count = try bytes.withUnsafeMutableBytes { buffer in
            let length = try compound.write(into: buffer)
            return try protection?.protectRTCP(buffer, length: length) ?? length
        }
        try bytes.withUnsafeBytes { try rtcp.send(UnsafeRawBufferPointer(rebasing: $0[0..<count]), to: destination) }
    }

    /// Whether a datagram on a multiplexed port is RTCP (RFC 5761 §4): its second byte, less the
    /// RTP marker bit, falls in 64...95, i.e. RTCP packet types 192...223, which no dynamic RTP payload
    /// type uses.
    public static func isRTCP(_ datagram: UnsafeRawBufferPointer) -> Bool {
        datagram.count >= 2 && (64...95).contains(datagram[1] & 0x7F)
    }
}
