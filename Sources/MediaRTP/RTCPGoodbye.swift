/// BYE (RFC 3550 §6.6): sources leaving the session, with an optional reason.
///
/// ```
/// SC × SSRC/CSRC (32) | [length (8) | reason for leaving ... | 0 padding to 32 bits]
/// ```

public struct Goodbye: RTCPSerializable, Hashable {
    /// The sources leaving (up to 31).
    public var sources: [UInt32]
    /// "reason for leaving" as bytes (UTF-8, at most 255), or nil when absent.
    public var reason: [UInt8]?

    public init(sources: [UInt32], reason: [UInt8]? = nil) {
        self.sources = sources
        self.reason = reason
    }

    public init(sources: [UInt32], reasonText: String) { self.init(sources: sources, reason: Array(reasonText.utf8)) }

    /// The reason decoded as UTF-8.
    public var reasonText: String? { reason.map { String(decoding: $0, as: UTF8.self) } }

    init(body: UnsafeRawBufferPointer, header: RTCPHeader) throws(RTCPError) {
        let count = Int(header.count)
        guard body.count >= 4 * count else { throw .goodbyeLengthInvalid }
        sources = (0..<count).map { body.networkUInt32(at: 4 * $0) }
        let reasonOffset = 4 * count
        if reasonOffset < body.count {
            let length = Int(body[reasonOffset])
            guard reasonOffset + 1 + length <= body.count else { throw .goodbyeReasonTruncated }
            reason = body.copyBytes(reasonOffset + 1..<reasonOffset + 1 + length)
        } else {
            reason = nil
        }
    }

    private var reasonLength: Int { reason.map { ($0.count + 1 + 3) & ~3 } ?? 0 }

    public var marshalSize: Int { RTCPHeader.size + 4 * sources.count + reasonLength }

    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer) throws(RTCPError) -> Int {
        if let reason, reason.count > 255 { throw .textTooLong(reason.count) }
        return try writeRTCPPacket(into: buffer, type: .goodbye, count: sources.count,
                                   bodyLength: marshalSize - RTCPHeader.size) { body in
            for (index, source) in sources.enumerated() { body.storeNetwork(source, at: 4 * index) }
            if let reason {
                let offset = 4 * sources.count
                body[offset] = UInt8(reason.count)
                let end = body.copy(contentsOf: reason, to: offset + 1)
                body.zero(body.count - end, at: end)
            }
        }
    }
}
