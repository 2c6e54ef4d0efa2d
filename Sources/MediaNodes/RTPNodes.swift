import MediaCore
import MediaFiles
import MediaRTP
import MediaTransport
import Synchronization

/// Sends encoded frames as one RTP stream: the graph adapter around an `RTPSendSession`. Keyframe
/// requests from the receiver (PLI, FIR) travel upstream as `.keyframeRequest`, to the encoder.
/// The graph's end closes the session (its BYE) unless `ownsSession` is false: then the session
/// outlives the graph, and a new graph can go on with the same stream (a peer connection's
/// `replaceTrack`).
public final class RTPSenderNode<Packetizer: RTPPacketizer>: MediaSink {
    public let name: String
    public let session: RTPSendSession<Packetizer>
    public let ownsSession: Bool
    private var clock: any MediaClock = SystemClock()

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
        clock = context.clock
        session.onKeyframeRequest = { context.sendUpstream(.keyframeRequest) }
        session.start()
    }

    public func consume(_ frame: EncodedFrame) throws { try session.send(frame) }

    public func finish() throws { if ownsSession { session.close() } }

    /// End of stream: the session lingers for late NACKs, then says BYE (`RTPSendSession.closeStep()`),
    /// while the node waits on the graph's timer instead of a worker.
    public func finishing() throws -> Finishing {
        guard ownsSession, let wait = session.closeStep() else { return .done }
        return .wait(until: clock.now + wait)
    }

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

/// The receivers of one recording (the audio and video of a call into one file): they end
/// together and share one timeline.
///
/// **Ending.** When one ends for a limit or silence, the others end too. At a BYE (RFC 3550 §6.6)
/// each waits for its own, but once one stream has said BYE, the others end after `afterGoodbye`
/// without a frame: the sender has left, and a stream whose BYE was lost (or never sent) should not
/// hold the file open for the whole silence limit.
///
/// **Lip sync.** Each receiver's frames count from its own first frame. A sender report (RFC 3550
/// §6.4.1) ties a stream's RTP time to the sender's NTP wall clock, which all its streams share
/// ("lip synchronization"): once every stream has had a sender report and a frame, each is moved
/// by how much later its first frame lies on that clock than the earliest stream's. Receivers hold
/// their frames until then, at most `syncWait` from their first frame; if a stream still has no
/// sender report (or one ended first), every stream starts at its own first frame, as without
/// reports.
public final class ReceiverGroup: Sendable {
    /// How long a stream may go without a frame once another said BYE.
    public let afterGoodbye: ClockTime
    /// How long frames are held for the sender reports of every stream.
    public let syncWait: ClockTime
    private struct State {
        var members = 0
        var origins: [Double?] = []
        var offsets: [Double]?
        var goodbyes = 0
        var stopped = false
        var synchronized = false
    }
    private let state = Locked(State())

    public init(afterGoodbye: ClockTime = .seconds(1), syncWait: ClockTime = .seconds(2)) {
        self.afterGoodbye = afterGoodbye
        self.syncWait = syncWait
    }

    /// Adds a receiver; returns its index in the group.
    func join() -> Int {
        state.withLock { state in
            state.origins.append(nil)
            state.members += 1
            return state.members - 1
        }
    }

    /// Ends every receiver of the group at its next step.
    public func stop() { state.withLock { $0.stopped = true } }
    public var isStopped: Bool { state.withLock { $0.stopped } }
    /// Whether some receiver of the group has had its sender's BYE.
    public var goodbyeHeard: Bool { state.withLock { $0.goodbyes > 0 } }
    func noteGoodbye() { state.withLock { $0.goodbyes += 1 } }

    /// Whether the streams were placed by their sender reports (else each starts at its first frame);
    /// nil while undecided.
    public var synchronizedBySenderReports: Bool? { state.withLock { $0.offsets == nil ? nil : $0.synchronized } }

    /// The seconds receiver `member` moves its frames by, once decided: `origin` is its first
    /// frame's wall-clock time (`RTPReceiveSession.originWallClock`) when known; `givingUp` decides
    /// without the missing ones (every stream then starts at its first frame).
    func offset(of member: Int, origin: Double?, givingUp: Bool) -> Double? {
        state.withLock { state in
            if state.offsets == nil {
                if let origin { state.origins[member] = origin }
                let known = state.origins.compactMap { $0 }
                if known.count == state.members, let earliest = known.min() {
                    state.offsets = known.map { $0 - earliest }
                    state.synchronized = true
                } else if givingUp {
                    state.offsets = Array(repeating: 0, count: state.members)
                }
            }
            return state.offsets?[member]
        }
    }
}

/// Receives one RTP stream as encoded frames: the graph adapter around an `RTPReceiveSession`.
///
/// A video stream's picture size is known only from its first keyframe, so negotiation
/// (`outputCaps()`, when the graph is built) waits for it, up to the silence limit; that frame is
/// then the first one produced. The stream ends at the sender's BYE, or at the first limit reached.
/// In a `ReceiverGroup`, frames are moved onto the group's timeline (sender reports) and held until
/// it is decided.
///
/// Over a transport whose sockets `SocketReactor` can watch (UDP), the node runs on the graph's
/// shared workers and never blocks: `produce()` takes what is queued and, when no frame is due,
/// re-arms the reactor's watch on the sockets (whose handler wakes the node) and waits until the
/// session's next deadline. Over another transport (a peer's, fed by a thread of its own) it keeps
/// a thread and waits in the session.
public final class RTPReceiverNode<Depacketizer: RTPDepacketizer>: MediaSource {
    /// Why the stream ended.
    public enum EndReason: String, Sendable {
        case goodbye = "the sender said BYE"
        case frameLimit = "frame limit reached"
        case duration = "duration reached"
        case silence = "nothing received for the silence timeout"
        case together = "another stream of the recording ended"
        case silentAfterGoodbye = "silent after another stream of the sender said BYE"
    }

    public let name: String
    public let session: RTPReceiveSession<Depacketizer>
    public let limits: RTPReceiveLimits
    /// Nominal frame rate of a video stream (SDP `a=framerate`), and channels of an audio one.
    public let frameRate: Rational
    public let channels: Int
    /// Shared by the receivers of one recording (audio and video into one file): they end together
    /// and share a timeline (`ReceiverGroup`).
    public let together: ReceiverGroup?
    public private(set) var endReason: EndReason?
    public private(set) var framesProduced = 0
    /// The seconds this stream's frames were moved by onto the group's timeline, once decided.
    public private(set) var timelineOffset: Double?
    private let member: Int?
    private var held: EncodedFrame?
    /// Frames received while the group's timeline is undecided.
    private var pending: [EncodedFrame] = []
    private var shift: MediaTime?
    private var ending: EndReason?
    private var framesReceived = 0
    private var clock: any MediaClock = SystemClock()
    private var firstFrameAt: ClockTime?
    private var lastFrameAt: ClockTime?
    /// Whether `SocketReactor` can watch the session's transport (then the node is `.shared`).
    private let watchable: Bool
    /// What wakes the node in its graph (`NodeContext.wake`).
    private var wake: @Sendable () -> Void = {}
    /// The reactor's watch on the session's sockets, from the first `produce()` to `close()`.
    private var watches: [ReactorRegistration] = []
    /// How often a receiver of a `ReceiverGroup` looks at the group (another member's end, the
    /// timeline), which changes without waking it.
    private static var groupPollInterval: ClockTime { .milliseconds(100) }

    public init(session: RTPReceiveSession<Depacketizer>, limits: RTPReceiveLimits = RTPReceiveLimits(), frameRate: Rational = Rational(30, 1),
                channels: Int = 2, together: ReceiverGroup? = nil, name: String = "rtp-receiver") {
        self.session = session
        self.together = together
        member = together?.join()
        self.limits = limits
        self.frameRate = frameRate
        self.channels = channels
        self.name = name
        watchable = !session.transport.readinessDescriptors.isEmpty
    }

    private var isAudio: Bool { Depacketizer.codec == .opus }

    /// `.shared` when the reactor can watch the transport, else `produce()` waits in the transport.
    public var execution: NodeExecution { watchable ? .shared : .ownThread }

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

    public func start(output: MediaFormat, context: NodeContext) throws {
        clock = context.clock
        wake = context.wake
    }

    public func produce() throws -> Production<EncodedFrame> {
        let now = clock.now
        if let frame = held {
            held = nil
            take(frame, at: now)
        }
        if ending == nil { ending = limitReached(at: now) }
        if let frame = ready(at: now) { return deliver(frame) }
        if let ending { return end(ending) }
        return watchable ? try pollForFrame(at: now) : try waitForFrame(at: now)
    }

    /// `.shared`: takes what the sockets hold without waiting; when no frame is due, re-arms the
    /// watch and waits for the session's next deadline (or a packet: the reactor wakes the node).
    /// The watch is re-armed after the sockets were read: a packet that came in between makes the
    /// re-armed watch fire at once (epoll(7), level-triggered), and a wake while the node runs steps
    /// it again, so none waits unseen.
    private func pollForFrame(at now: ClockTime) throws -> Production<EncodedFrame> {
        if watches.isEmpty {
            // Here, not at `start` (build time): the graph can wake the node once it runs.
            for descriptor in session.transport.readinessDescriptors {
                watches.append(try SocketReactor.shared.register(descriptor: descriptor, handler: wake))
            }
        }
        switch try session.poll() {
        case .frame(let frame):
            take(frame, at: now)
            if let frame = ready(at: now) { return deliver(frame) }
        case .goodbye:
            ending = .goodbye
            return try produce()
        case .timedOut:
            break
        }
        for watch in watches { watch.rearm() }
        var wakeAt = deadline(at: now)
        if let delay = session.timeToNextDeadline() { wakeAt = min(wakeAt, now + delay) }
        if together != nil { wakeAt = min(wakeAt, now + Self.groupPollInterval) }
        return .wait(until: wakeAt)
    }

    /// `.ownThread`: waits in the session for the next frame, the deadline or its BYE.
    private func waitForFrame(at now: ClockTime) throws -> Production<EncodedFrame> {
        // Return now and then, so that the graph can stop a quiet receiver.
        switch try session.next(until: min(deadline(at: now), now + .milliseconds(100))) {
        case .frame(let frame):
            take(frame, at: clock.now)
            return ready(at: clock.now).map(deliver) ?? .wait(until: clock.now)
        case .goodbye:
            ending = .goodbye
            return .wait(until: clock.now)
        case .timedOut:
            return .wait(until: clock.now)
        }
    }

    /// Why receiving should stop now, if it should.
    private func limitReached(at now: ClockTime) -> EndReason? {
        if let frames = limits.frames, framesReceived >= frames { return .frameLimit }
        if together?.isStopped == true { return .together }
        if let duration = limits.duration, let first = firstFrameAt, now >= first + duration { return .duration }
        guard now >= deadline(at: now) else { return nil }
        return together?.goodbyeHeard == true && now < (lastFrameAt ?? now) + limits.silence ? .silentAfterGoodbye : .silence
    }

    /// When the silence or duration limit ends the stream.
    private func deadline(at now: ClockTime) -> ClockTime {
        var silence = limits.silence
        if let together, together.goodbyeHeard { silence = min(silence, together.afterGoodbye) }
        var deadline = (lastFrameAt ?? now) + silence
        if let duration = limits.duration, let first = firstFrameAt { deadline = min(deadline, first + duration) }
        return deadline
    }

    private func take(_ frame: EncodedFrame, at now: ClockTime) {
        if firstFrameAt == nil { firstFrameAt = now }
        lastFrameAt = now
        framesReceived += 1
        pending.append(frame)
    }

    /// The next frame on the group's timeline, once it is decided.
    private func ready(at now: ClockTime) -> EncodedFrame? {
        guard !pending.isEmpty else { return nil }
        if shift == nil {
            guard let together, let member else {
                shift = .zero(Rational(1, Depacketizer.clockRate))
                return ready(at: now)
            }
            let givingUp = ending != nil || now >= (firstFrameAt ?? now) + together.syncWait
            guard let seconds = together.offset(of: member, origin: session.originWallClock, givingUp: givingUp) else { return nil }
            timelineOffset = seconds
            shift = MediaTime(Int64((seconds * Double(Depacketizer.clockRate)).rounded()), timebase: Rational(1, Depacketizer.clockRate))
        }
        var frame = pending.removeFirst()
        if let shift, shift.value != 0 { frame.shift(by: shift) }
        return frame
    }

    private func deliver(_ frame: EncodedFrame) -> Production<EncodedFrame> {
        framesProduced += 1
        return .item(frame)
    }

    private func end(_ reason: EndReason) -> Production<EncodedFrame> {
        if endReason == nil {
            endReason = reason
            if reason == .goodbye { together?.noteGoodbye() }
        }
        if reason != .goodbye && reason != .silentAfterGoodbye { together?.stop() }
        return .end
    }

    /// Stops the watch (its handler has returned and will not run again), then closes the session.
    public func close() {
        for watch in watches { watch.cancel() }
        watches = []
        session.close()
    }
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
