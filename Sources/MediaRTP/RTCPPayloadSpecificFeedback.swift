/// Payload-specific feedback (PSFB, RFC 4585 §6.3) this module decodes: Picture Loss Indication
/// (FMT 1, RFC 4585 §6.3.1), Full Intra Request (FMT 4, RFC 5104 §4.3.1) and Receiver Estimated Maximum
/// Bitrate (FMT 15 "application layer feedback" with the "REMB" identifier,
/// draft-alvestrand-rmcat-remb-03 §2.2).
///
/// ```
/// FIR FCI entry:  SSRC (32) | seq nr (8) | reserved (24)
/// REMB FCI:       'R' 'E' 'M' 'B' | num SSRC (8) | BR exp (6) | BR mantissa (18) | num SSRC × SSRC (32)
/// ```

/// PLI: the receiver lost pictures of `mediaSSRC` and asks for a way to recover (RFC 4585 §6.3.1). No FCI.
public struct PictureLossIndication: RTCPSerializable, Hashable {
    /// FMT of PLI in a PSFB packet.
    public static let format: UInt8 = 1

    /// "SSRC of packet sender".
    public var senderSSRC: UInt32
    /// "SSRC of media source": the stream whose pictures were lost.
    public var mediaSSRC: UInt32

    public init(senderSSRC: UInt32, mediaSSRC: UInt32) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
    }

    init(fci: UnsafeRawBufferPointer, senderSSRC: UInt32, mediaSSRC: UInt32) throws(RTCPError) {
        // "PLI does not require parameters. Therefore, the length field MUST be 2."
        guard fci.isEmpty else { throw .payloadSpecificFeedbackLengthInvalid }
        self.init(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC)
    }

    public var marshalSize: Int { RTCPHeader.size + feedbackSSRCsLength }

    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer) throws(RTCPError) -> Int {
        try writeRTCPFeedback(into: buffer, type: .payloadSpecificFeedback, format: Self.format,
                              senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, fciLength: 0) { _ in }
    }
}

/// FIR: asks each listed media sender for a decoder refresh point (RFC 5104 §4.3.1). The sequence
/// number of each entry grows by one per new request, so that a repeated packet is not a new request.
public struct FullIntraRequest: RTCPSerializable, Hashable {
    /// FMT of FIR in a PSFB packet.
    public static let format: UInt8 = 4

    /// One FCI entry.
    public struct Entry: Sendable, Hashable {
        /// The media sender asked for an intra picture.
        public var ssrc: UInt32
        /// "Seq nr.": command sequence number, modulo 256.
        public var sequenceNumber: UInt8

        public init(ssrc: UInt32, sequenceNumber: UInt8) {
            self.ssrc = ssrc
            self.sequenceNumber = sequenceNumber
        }
    }

    /// "SSRC of packet sender".
    public var senderSSRC: UInt32
    /// "SSRC of media source": not used by FIR and set to 0 (RFC 5104 §4.3.1.2); kept as received.
    public var mediaSSRC: UInt32
    public var entries: [Entry]

    public init(senderSSRC: UInt32, mediaSSRC: UInt32 = 0, entries: [Entry]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.entries = entries
    }

    init(fci: UnsafeRawBufferPointer, senderSSRC: UInt32, mediaSSRC: UInt32) throws(RTCPError) {
        guard fci.count % 8 == 0 else { throw .payloadSpecificFeedbackLengthInvalid }
        self.init(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, entries: stride(from: 0, to: fci.count, by: 8).map {
            Entry(ssrc: fci.networkUInt32(at: $0), sequenceNumber: fci[$0 + 4])
        })
    }

    public var marshalSize: Int { RTCPHeader.size + feedbackSSRCsLength + 8 * entries.count }

    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer) throws(RTCPError) -> Int {
        try writeRTCPFeedback(into: buffer, type: .payloadSpecificFeedback, format: Self.format,
                              senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, fciLength: 8 * entries.count) { fci in
            for (index, entry) in entries.enumerated() {
                fci.storeNetwork(entry.ssrc, at: 8 * index)
                fci.storeNetwork(UInt32(entry.sequenceNumber) << 24, at: 8 * index + 4)  // seq nr, reserved 0
            }
        }
    }
}

/// REMB: the receiver's estimate of the total bitrate the listed streams may use
/// (draft-alvestrand-rmcat-remb-03 §2.2). The bitrate travels as an 18-bit mantissa and 6-bit exponent,
/// so writing rounds it down to 18 significant bits.
public struct REMB: RTCPSerializable, Hashable {
    /// FMT of application layer feedback in a PSFB packet.
    public static let format: UInt8 = 15
    /// "Unique identifier": the ASCII characters "REMB".
    public static let uniqueIdentifier: UInt32 = 0x5245_4D42

    /// The largest bitrate the 64-bit field holds with an 18-bit mantissa: 0x3FFFF << 46.
    public static let maximumBitrate: UInt64 = 0x3_FFFF << 46

    /// "SSRC of packet sender".
    public var senderSSRC: UInt32
    /// "SSRC of media source": always 0 for REMB; kept as received.
    public var mediaSSRC: UInt32
    /// The estimate in bits per second. A received value beyond 64 bits reads as `maximumBitrate`.
    public var bitrate: UInt64
    /// The streams the estimate covers (at most 255).
    public var ssrcs: [UInt32]

    public init(senderSSRC: UInt32, mediaSSRC: UInt32 = 0, bitrate: UInt64, ssrcs: [UInt32]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.bitrate = bitrate
        self.ssrcs = ssrcs
    }

    /// Whether a PSFB FMT 15 FCI is a REMB (other application layer feedback passes through opaque).
    static func isREMB(fci: UnsafeRawBufferPointer) -> Bool {
        fci.count >= 4 && fci.networkUInt32(at: 0) == uniqueIdentifier
    }

    init(fci: UnsafeRawBufferPointer, senderSSRC: UInt32, mediaSSRC: UInt32) throws(RTCPError) {
        guard fci.count >= 8, fci.count == 8 + 4 * Int(fci[4]) else { throw .rembLengthInvalid }
        let exponent = UInt64(fci[5] >> 2)
        let mantissa = UInt64(fci.networkUInt24(at: 5) & 0x3_FFFF)
        let fits = mantissa == 0 || exponent <= UInt64(mantissa.leadingZeroBitCount)
        self.init(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, bitrate: fits ? mantissa << exponent : Self.maximumBitrate,
                  ssrcs: (0..<Int(fci[4])).map { fci.networkUInt32(at: 8 + 4 * $0) })
    }

    /// The exponent and 18-bit mantissa written for `bitrate`: the smallest exponent that fits.
    public var exponentAndMantissa: (exponent: UInt8, mantissa: UInt32) {
        let exponent = max(0, (64 - bitrate.leadingZeroBitCount) - 18)
        return (UInt8(exponent), UInt32(truncatingIfNeeded: bitrate >> UInt64(exponent)))
    }

    public var marshalSize: Int { RTCPHeader.size + feedbackSSRCsLength + 8 + 4 * ssrcs.count }

    @discardableResult
    public func write(into buffer: UnsafeMutableRawBufferPointer) throws(RTCPError) -> Int {
        guard ssrcs.count <= 255 else { throw .countOutOfRange(ssrcs.count) }
        let (exponent, mantissa) = exponentAndMantissa
        return try writeRTCPFeedback(into: buffer, type: .payloadSpecificFeedback, format: Self.format,
                                     senderSSRC: senderSSRC, mediaSSRC: mediaSSRC,
                                     fciLength: 8 + 4 * ssrcs.count) { fci in
            fci.storeNetwork(Self.uniqueIdentifier, at: 0)
            fci[4] = UInt8(ssrcs.count)
            fci.storeNetworkUInt24(UInt32(exponent) << 18 | mantissa, at: 5)
            for (index, ssrc) in ssrcs.enumerated() { fci.storeNetwork(ssrc, at: 8 + 4 * index) }
        }
    }
}
