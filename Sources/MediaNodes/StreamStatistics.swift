import MediaCore
import MediaRTP
import MediaTransport

/// A sending pipeline's stream as W3C webrtc-stats `RTCOutboundRtpStreamStats` names it, from the
/// counters the RTP session, the sender and the encoder keep. Times are in seconds, as there.
public struct OutboundRTPStreamStatistics: Sendable {
    public var ssrc: UInt32
    /// `packetsSent` and `bytesSent` (payload), retransmissions included (also those sent as RTX).
    public var packetsSent: Int
    public var bytesSent: Int
    /// `framesSent`, `framesEncoded` and `keyFramesEncoded` (0 when the input is sent as it is).
    public var framesSent: Int
    public var framesEncoded: Int
    public var keyFramesEncoded: Int
    /// `totalEncodeTime`, in seconds.
    public var totalEncodeTime: Double
    /// `retransmittedPacketsSent`, `retransmittedBytesSent` (payload).
    public var retransmittedPacketsSent: Int
    public var retransmittedBytesSent: Int
    /// Feedback received: `nackCount`, `pliCount`, `firCount`.
    public var nackCount: Int
    public var pliCount: Int
    public var firCount: Int
    /// `frameWidth`, `frameHeight` and `framesPerSecond` of the encoded video.
    public var frameWidth: Int?
    public var frameHeight: Int?
    public var framesPerSecond: Double?
    /// From the receiver's reports (W3C `RTCRemoteInboundRtpStreamStats`): `fractionLost`,
    /// `packetsLost`, `roundTripTime` (seconds).
    public var remoteFractionLost: Double?
    public var remotePacketsLost: Int?
    public var roundTripTime: Double?
    /// Sluice's per-stage latencies, when the pipeline traces frames (`TranscodeOptions.tracer`).
    public var latencies: FrameLatencies?
    /// Everything the RTP session counts.
    public var session: RTPSendStatistics
}

/// A receiving pipeline's stream as W3C webrtc-stats `RTCInboundRtpStreamStats` names it, from the
/// counters the RTP session, its jitter buffer and the decoder keep. Times are in seconds.
public struct InboundRTPStreamStatistics: Sendable {
    public var ssrc: UInt32?
    /// `packetsReceived` (retransmissions included), `packetsLost` (RFC 3550: expected less
    /// received), `jitter` (seconds), `bytesReceived` (payload) and `headerBytesReceived`.
    public var packetsReceived: Int
    public var packetsLost: Int
    public var jitter: Double
    public var bytesReceived: Int
    public var headerBytesReceived: Int
    /// `framesReceived` (whole frames out of the jitter buffer), `framesDecoded`,
    /// `keyFramesDecoded`, `framesDropped` (given up in the jitter buffer, skipped or rejected by the
    /// decoder), `totalDecodeTime`.
    public var framesReceived: Int
    public var framesDecoded: Int
    public var keyFramesDecoded: Int
    public var framesDropped: Int
    public var totalDecodeTime: Double
    /// `jitterBufferDelay` and `jitterBufferTargetDelay` (seconds, summed over the
    /// `jitterBufferEmittedCount` frames released; Sluice counts audio in packets, not samples).
    public var jitterBufferDelay: Double
    public var jitterBufferTargetDelay: Double
    public var jitterBufferEmittedCount: Int
    /// Feedback sent: `nackCount` (NACK packets), `pliCount`.
    public var nackCount: Int
    public var pliCount: Int
    /// `retransmittedPacketsReceived`: packets that came after a NACK, or as RTX.
    public var retransmittedPacketsReceived: Int
    /// `frameWidth`, `frameHeight` and `framesPerSecond` of the decoded video.
    public var frameWidth: Int?
    public var frameHeight: Int?
    public var framesPerSecond: Double?
    /// Sluice's per-stage latencies, when the pipeline traces frames (`ReceiveOptions.tracer`).
    public var latencies: FrameLatencies?
    /// Everything the RTP session counts.
    public var session: RTPReceiveStatistics

    public init(session: RTPReceiveStatistics, decoder: DecoderStatistics?, latencies: FrameLatencies?) {
        let jitterBuffer = session.jitterBuffer ?? JitterBufferStatistics()
        ssrc = session.ssrc
        packetsReceived = session.packetsReceived
        packetsLost = Int(jitterBuffer.cumulativeLost)
        jitter = jitterBuffer.jitterSeconds
        bytesReceived = session.payloadBytesReceived
        headerBytesReceived = session.bytesReceived - session.payloadBytesReceived
        framesReceived = jitterBuffer.framesReleased
        framesDecoded = decoder?.framesDecoded ?? 0
        keyFramesDecoded = decoder?.keyFramesDecoded ?? 0
        framesDropped = jitterBuffer.framesDropped + (decoder.map { $0.skippedFrames + $0.corruptFrames } ?? 0)
        totalDecodeTime = decoder?.totalDecodeTime.seconds ?? 0
        jitterBufferDelay = jitterBuffer.totalDelay.seconds
        jitterBufferTargetDelay = jitterBuffer.totalTargetDelay.seconds
        jitterBufferEmittedCount = jitterBuffer.framesReleased
        nackCount = session.nacksSent
        pliCount = session.keyframeRequestsSent
        retransmittedPacketsReceived = jitterBuffer.recovered
        frameWidth = decoder?.frameWidth
        frameHeight = decoder?.frameHeight
        framesPerSecond = decoder?.framesPerSecond
        self.latencies = latencies
        self.session = session
    }
}

extension OutboundRTPStreamStatistics {
    public init(ssrc: UInt32, session: RTPSendStatistics, encoder: EncoderStatistics?, latencies: FrameLatencies?) {
        self.ssrc = ssrc
        packetsSent = session.packetsSent + session.retransmissions
        // webrtc-stats counts retransmissions in both, as in packetsSent; the session's own payload
        // count is RFC 3550's (first transmissions only).
        bytesSent = session.payloadBytesSent + session.retransmittedPayloadBytes
        framesSent = session.framesSent
        framesEncoded = encoder?.framesEncoded ?? 0
        keyFramesEncoded = encoder?.keyFramesEncoded ?? 0
        totalEncodeTime = encoder?.totalEncodeTime.seconds ?? 0
        retransmittedPacketsSent = session.retransmissions
        retransmittedBytesSent = session.retransmittedPayloadBytes
        nackCount = session.nacksReceived
        pliCount = session.pliReceived
        firCount = session.firReceived
        frameWidth = encoder?.frameWidth
        frameHeight = encoder?.frameHeight
        framesPerSecond = encoder?.framesPerSecond
        remoteFractionLost = session.fractionLost
        remotePacketsLost = session.cumulativeLost
        roundTripTime = session.roundTripTime
        self.latencies = latencies
        self.session = session
    }
}
