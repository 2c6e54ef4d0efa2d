import MediaCore
import MediaFiles
import MediaRTP
import MediaTransport

/// Sends encoded frames as one RTP stream: the graph adapter around an `RTPSendSession`. Keyframe
/// requests from the receiver (PLI, FIR) travel upstream as `.keyframeRequest`, to the encoder.
/// The graph's end closes the session (its BYE) unless `ownsSession` is false: then the session
/// outlives the graph, and a new graph can go on with the same stream (a peer connection's
/// `replaceTrack`).
public final class RTPSenderNode<Packetizer: RTPPacketizer>: MediaSink {
    public let name: String
    public let session: RTPSendSession<Packetizer>
    public let ownsSession: Bool

    public init(session: RTPSendSession<Packetizer>, ownsSession: Bool = true, name: String = "rtp-sender") {
        self.session = session
        self.ownsSession = ownsSession
        self.name = name
    }

    public var inputCaps: Caps {
        let encoding = Choice<Encoding>.exactly(.compressed(Packetizer.codec))
        return [.video(encoding), .audio(encoding)]
    }

    public func start(input: MediaFormat, context: NodeContext) throws {
        session.onKeyframeRequest = { context.sendUpstream(.keyframeRequest) }
        session.start()
    }

    public func consume(_ frame: EncodedFrame) throws { try session.send(frame) }

    /// End of stream: the session says BYE.
    public func finish() throws { if ownsSession { session.close() } }

    public func close() { if ownsSession { session.close() } }
}

/// When to stop receiving, besides the sender's BYE.
public struct RTPReceiveLimits: Sendable {
    /// Frames to produce.
    public var frames: Int?
    /// Time from the first frame.
    public var duration: ClockTime?
    /// Time without a frame (also: the longest wait for the first keyframe).
    public var silence: ClockTime

    public init(frames: Int? = nil, duration: ClockTime? = nil, silence: ClockTime = .seconds(10)) {
        self.frames = frames
        self.duration = duration
        self.silence = silence
    }
}

/// Receives one RTP stream as encoded frames: the graph adapter around an `RTPReceiveSession`.
///
/// A video stream's picture size is known only from its first keyframe, so negotiation
/// (`outputCaps()`, when the graph is built) waits for it, up to the silence limit; that frame is
/// then the first one produced. The stream ends at the sender's BYE, or at the first limit reached.
public final class RTPReceiverNode<Depacketizer: RTPDepacketizer>: MediaSource {
    /// Why the stream ended.
    public enum EndReason: String, Sendable {
        case goodbye = "the sender said BYE"
        case frameLimit = "frame limit reached"
        case duration = "duration reached"
        case silence = "nothing received for the silence timeout"
        case together = "another stream of the recording ended"
    }

    public let name: String
    public let session: RTPReceiveSession<Depacketizer>
    public let limits: RTPReceiveLimits
    /// Nominal frame rate of a video stream (SDP `a=framerate`), and channels of an audio one.
    public let frameRate: Rational
    public let channels: Int
    /// Shared by the receivers of one recording (audio and video into one file): when one of them
    /// ends, for a limit or silence, the others end too (at a BYE each waits for its own).
    public let together: StopSignal?
    public private(set) var endReason: EndReason?
    public private(set) var framesProduced = 0
    private var held: EncodedFrame?
    private var clock: any MediaClock = SystemClock()
    private var firstFrameAt: ClockTime?
    private var lastFrameAt: ClockTime?

    public init(session: RTPReceiveSession<Depacketizer>, limits: RTPReceiveLimits = RTPReceiveLimits(), frameRate: Rational = Rational(30, 1),
                channels: Int = 2, together: StopSignal? = nil, name: String = "rtp-receiver") {
        self.session = session
        self.together = together
        self.limits = limits
        self.frameRate = frameRate
        self.channels = channels
        self.name = name
    }

    private var isAudio: Bool { Depacketizer.codec == .opus }

    /// `produce()` waits for packets on the transport.
    public var execution: NodeExecution { .ownThread }

    public func outputCaps() throws -> Caps {
        let encoding = Encoding.compressed(Depacketizer.codec)
        if isAudio { return Caps(.audio(AudioFormat(encoding: encoding, sampleRate: Depacketizer.clockRate, channels: channels))) }
        let size = try firstKeyframeSize()
        return Caps(.video(VideoFormat(encoding: encoding, width: size.width, height: size.height, frameRate: frameRate)))
    }

    /// Receives until a keyframe shows the picture size, and keeps that frame for `produce()`.
    private func firstKeyframeSize() throws -> (width: Int, height: Int) {
        let deadline = SystemClock().now + limits.silence
        while true {
            switch try session.next(until: deadline) {
            case .frame(let frame):
                guard frame.isKeyframe, let size = EncodedPictureSize.of(frame) else { continue }
                held = frame
                return size
            case .goodbye:
                throw RTPReceiveError.endedBeforeKeyframe(address: session.transport.name)
            case .timedOut:
                throw RTPReceiveError.noKeyframe(address: session.transport.name, seconds: limits.silence.seconds,
                                                 packets: session.statistics.packetsReceived)
            }
        }
    }

    public func start(output: MediaFormat, context: NodeContext) throws { clock = context.clock }

    public func produce() throws -> Production<EncodedFrame> {
        if let frames = limits.frames, framesProduced >= frames { return end(.frameLimit) }
        if together?.isStopped == true { return end(.together) }
        let now = clock.now
        if let frame = held {
            held = nil
            return deliver(frame, at: now)
        }
        var deadline = (lastFrameAt ?? now) + limits.silence
        if let duration = limits.duration, let first = firstFrameAt {
            guard now < first + duration else { return end(.duration) }
            deadline = min(deadline, first + duration)
        }
        guard now < deadline else { return end(.silence) }
        // Return now and then, so that the graph can stop a quiet receiver.
        switch try session.next(until: min(deadline, now + .milliseconds(100))) {
        case .frame(let frame): return deliver(frame, at: clock.now)
        case .goodbye: return end(.goodbye)
        case .timedOut: return .wait(until: clock.now)
        }
    }

    private func deliver(_ frame: EncodedFrame, at now: ClockTime) -> Production<EncodedFrame> {
        if firstFrameAt == nil { firstFrameAt = now }
        lastFrameAt = now
        framesProduced += 1
        return .item(frame)
    }

    private func end(_ reason: EndReason) -> Production<EncodedFrame> {
        if endReason == nil { endReason = reason }
        if reason != .goodbye { together?.stop() }
        return .end
    }

    public func close() { session.close() }
}

/// Why receiving could not begin.
public enum RTPReceiveError: Error, Equatable, CustomStringConvertible {
    case noKeyframe(address: String, seconds: Double, packets: Int)
    case endedBeforeKeyframe(address: String)

    public var description: String {
        switch self {
        case .noKeyframe(let address, let seconds, let packets):
            return "\(address): no keyframe within \(seconds) s (\(packets) RTP packets of the stream received)"
        case .endedBeforeKeyframe(let address):
            return "\(address): the sender said BYE before any keyframe arrived"
        }
    }
}

/// The picture size a keyframe declares, so a receiver can negotiate before decoding.
public enum EncodedPictureSize {
    public static func of(_ frame: EncodedFrame) -> (width: Int, height: Int)? {
        switch frame.codec {
        case .vp8: return vp8(frame.bytes)
        case .h264: return h264(frame.bytes)
        default: return nil
        }
    }

    /// A VP8 key frame (RFC 6386 §9.1): a 3-byte frame tag, the start code 9d 01 2a, then width and
    /// height as 14-bit little-endian values (the top two bits are the scaling mode).
    static func vp8(_ bytes: UnsafeRawBufferPointer) -> (width: Int, height: Int)? {
        guard bytes.count >= 10, bytes[0] & 1 == 0, bytes[3] == 0x9D, bytes[4] == 0x01, bytes[5] == 0x2A else { return nil }
        let width = (Int(bytes[6]) | Int(bytes[7]) << 8) & 0x3FFF
        let height = (Int(bytes[8]) | Int(bytes[9]) << 8) & 0x3FFF
        return width > 0 && height > 0 ? (width, height) : nil
    }

    /// An H.264 access unit: the size its sequence parameter set gives (after cropping).
    static func h264(_ bytes: UnsafeRawBufferPointer) -> (width: Int, height: Int)? {
        for unit in AnnexB.nalUnits(in: bytes) where H264NALType.type(ofHeader: bytes[unit.lowerBound]) == H264NALType.sps {
            if let sps = try? H264SequenceParameterSet(parsing: UnsafeRawBufferPointer(rebasing: bytes[unit])) {
                return (sps.width, sps.height)
            }
        }
        return nil
    }
}
