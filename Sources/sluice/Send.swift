import ArgumentParser
import Dispatch
import Foundation
import Glibc
import Sluice

struct Send: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a media file as an RTP stream, paced in real time.",
        discussion: """
            The input's codec is sent as it is (VP8 or H.264 from .ivf/.h264, Opus
            from .opus); raw input (.y4m, .wav) is encoded, as VP8 or Opus unless
            --codec says otherwise, and so is compressed input when --codec, --size,
            --fps or --bitrate asks for a change. RTCP goes to the next port (the
            same one with --rtcp-mux): NACKs are answered with retransmissions,
            keyframe requests (PLI, FIR) with a keyframe when encoding; sender
            reports go out every second and a BYE at the end. Encoded video has a
            keyframe every second unless --keyint says otherwise, and one for each
            new receiver's first report, so receivers that start late decode at once.

            --sdp writes a session description that receivers can open; --wait
            gives them time to start before the first packet. For example:
              ffmpeg -protocol_whitelist file,udp,rtp -i stream.sdp out.y4m
              sluice receive stream.sdp out.ivf

            Examples:
              sluice send clip.ivf --to 127.0.0.1:5004 --sdp s.sdp --wait 2
              sluice send clip.y4m --to 127.0.0.1:5004 --codec h264 --bitrate 1M
              sluice send speech.wav --to 127.0.0.1:5006 --bitrate 32k
              sluice send clip.ivf --to 127.0.0.1:5004 --impair loss=5%,reorder=3%
              sluice send clip.ivf --to 127.0.0.1:5004 --srtp --sdp secure.sdp --wait 2
              sluice send clip.mp4 --to 127.0.0.1:5004 --audio-to 127.0.0.1:5006 --sdp call.sdp --wait 2
                  (video and audio, one SDP: 'sluice receive call.sdp call.webm' records both)
              sluice send clip.ivf --to 127.0.0.1:5004 --loop          (a camera stand-in)
              sluice send v4l2:/dev/video0 --to 127.0.0.1:5004 --size 640x480 --fps 30
              sluice send alsa:default --to 127.0.0.1:5006
            """)

    @Argument(help: "The file to send (.y4m, .ivf, .h264, .wav, .opus), or a device: v4l2:/dev/videoN, alsa:PCM.")
    var input: String

    @Option(help: "Where RTP goes, HOST:PORT (RTCP: PORT+1 unless --rtcp-mux).")
    var to: String

    @Option(name: .customLong("audio-to"), help: "Also send a container file's audio (.mp4, .webm, .mkv: Opus as it is, AAC as Opus) there, HOST:PORT.")
    var audioTo: String?

    @Option(help: "Write a session description (SDP) of the stream (or streams) to this file.")
    var sdp: String?

    @Option(parsing: .unconditional, help: "Seconds to wait after writing the SDP before sending, so that receivers can open it first.")
    var wait: Double = 0

    @Option(name: .customLong("payload-type"), parsing: .unconditional, help: "RTP payload type. Default: 96 for video, 111 for Opus.")
    var payloadType: UInt8?

    @Option(parsing: .unconditional, help: "Largest RTP payload in bytes.")
    var mtu = 1200

    @Flag(name: .customLong("rtcp-mux"), help: "RTP and RTCP on one port (RFC 5761).")
    var rtcpMux = false

    @Option(parsing: .unconditional, help: "Retransmit as RTX (RFC 4588) with this payload type, e.g. 97. Default: resend packets as they were.")
    var rtx: UInt8?

    @Option(name: .customLong("packetization-mode"), parsing: .unconditional, help: "H.264 packetization mode: 0 (single NAL unit) or 1 (STAP-A, FU-A).")
    var packetizationMode = 1

    @Option(help: "Impair the network on the way out, e.g. loss=5%,burst=3,reorder=3%,delay=20ms,jitter=5ms,seed=7.",
            transform: { try ImpairmentProfile(parsing: $0) })
    var impair: ImpairmentProfile?

    @Flag(help: "Protect the stream with SRTP (RFC 3711); the SDP carries the key (a=crypto, RFC 4568).")
    var srtp = false

    @Option(name: .customLong("srtp-key"), help: "SRTP master key and salt, base64 (30 bytes for AES_CM_128, 28/44 for AEAD_AES_128/256_GCM). Default: random.")
    var srtpKey: String?

    @Option(name: .customLong("srtp-suite"), help: "SRTP suite: AES_CM_128_HMAC_SHA1_80 (default), AES_CM_128_HMAC_SHA1_32, AEAD_AES_128_GCM, AEAD_AES_256_GCM.",
            transform: { text in
                guard let profile = SRTPProfile(sdesName: text.uppercased()) else {
                    throw ValidationError("unknown SRTP suite '\(text)': use " + SRTPProfile.allCases.map(\.sdesName).joined(separator: ", "))
                }
                return profile
            })
    var srtpSuite: SRTPProfile?

    @Flag(name: .customLong("as-fast-as-possible"), help: "Send without pacing (measurements only: receivers will drop).")
    var unpaced = false

    @OptionGroup var encoding: EncodingArguments

    @Flag(help: "Print no progress, only the summary.")
    var quiet = false

    func validate() throws {
        guard wait >= 0 && wait <= 3600 else { throw ValidationError("--wait must be between 0 and 3600 seconds") }
        guard (0...1).contains(packetizationMode) else { throw ValidationError("--packetization-mode must be 0 or 1") }
        guard (100...65_000).contains(mtu) else { throw ValidationError("--mtu must be between 100 and 65000") }
        for type in [payloadType, rtx].compactMap({ $0 }) where type > 127 {
            throw ValidationError("payload types are 0...127")
        }
    }

    func run() throws {
        var options = encoding.options
        // Late joiners: a receiver that opens the SDP after the first keyframe left (ffmpeg a moment
        // after `--sdp` is written) can decode nothing until the next one, and ffmpeg sends no RTCP
        // to a sender it knows only from an SDP, so no PLI or new-receiver report can ask for one.
        // A keyframe every second bounds its wait to a second, at the cost of about one keyframe's
        // bits a second; receivers that do send RTCP (Sluice, GStreamer) get a keyframe at their
        // first report (`keyframeOnNewReceiver`). --keyint overrides it.
        if options.keyframeInterval == nil { options.keyframePeriod = 1 }
        if unpaced { options.pacing = .asFastAsPossible }
        let sender: Transcoder
        do {
            var destination = try self.destination(to, option: "--to")
            destination.payloadType = payloadType
            destination.rtxPayloadType = rtx
            destination.h264PacketizationMode = packetizationMode == 0 ? .singleNALUnit : .nonInterleaved
            sender = try Transcoder(input: input, sendingTo: destination, audioTo: try audioTo.map { try self.destination($0, option: "--audio-to") },
                                    options: options)
            if let sdp {
                var description = SessionDescription(describing: sender.rtpSender!, frameRate: sender.inputFormat?.video?.frameRate,
                                                     channels: sender.outputFormat?.audio?.channels ?? 2)
                if let audio = sender.audioRTPSender {
                    let audioDescription = SessionDescription(describing: audio, channels: min(sender.audioBranch?.stream.channels ?? 2, 2))
                    var section = audioDescription.media[0]
                    if audioDescription.connection != description.connection { section.connections = audioDescription.connection.map { [$0] } ?? [] }
                    description.media.append(section)
                }
                try writeText(description.serialized(), to: sdp)
            }
        } catch {
            printError("sluice: \(error)")
            throw ExitCode.failure
        }
        if wait > 0 { Thread.sleep(forTimeInterval: wait) }
        let summary = try runInterruptibly(sender.graph, quiet: quiet, progress: { "sent \(sender.framesDone) frames" }) {
            try sender.run()
        }
        print(report(sender, summary))
    }

    /// Where a stream goes (`--to`, `--audio-to`), with the options both streams share.
    private func destination(_ text: String, option: String) throws -> RTPDestination {
        var destination: RTPDestination
        do {
            destination = RTPDestination(address: try SocketAddress(parsing: text))
        } catch {
            throw ValidationError("\(option): \(error)")
        }
        destination.maxPayloadSize = mtu
        destination.multiplexed = rtcpMux
        destination.impairment = impair
        if srtp || srtpKey != nil || srtpSuite != nil {
            let profile = srtpSuite ?? .aes128CmHmacSha1_80
            destination.srtp = try srtpKey.map {
                SRTPParameters(profile: profile, key: try SRTPKeyMaterial(sdesInline: "inline:" + $0, profile: profile))
            } ?? .random(profile)
        }
        return destination
    }

    private func report(_ sender: Transcoder, _ summary: TranscodeSummary) -> String {
        let rtp = sender.rtpSender!
        let statistics = rtp.statistics()
        var lines = ["sent \(input) -> \(Self.describe(rtp))"]
        lines.append("  input    \(sender.inputFormat.map { "\($0)" } ?? "?")")
        lines.append("  frames   \(summary.frames) in \(formatted(summary.elapsed)) s, \(statistics.packetsSent) packets, "
                     + "\(statistics.payloadBytesSent) payload bytes"
                     + (summary.bitrate > 0 ? " (\(formatted(summary.bitrate / 1000, digits: 1)) kbit/s)" : ""))
        if let audio = sender.audioRTPSender {
            let sent = audio.statistics()
            lines.append("  audio    \(sender.audioBranch?.stream.codecName ?? "?") -> \(Self.describe(audio)): "
                         + "\(sent.framesSent) packets, \(sent.payloadBytesSent) payload bytes")
        }
        lines.append("  rtcp     \(statistics.senderReports) sender reports, \(statistics.receiverReports) receiver reports, "
                     + "\(statistics.nacksReceived) NACKs -> \(statistics.retransmissions) retransmissions "
                     + "(\(statistics.retransmissionsMissed) too old), \(statistics.keyframeRequests) keyframe requests")
        if statistics.unprotectFailures > 0 {
            lines.append("  srtp     \(statistics.unprotectFailures) RTCP packets failed SRTCP checks and were dropped")
        }
        if let lost = statistics.cumulativeLost {
            lines.append("  receiver lost \(lost) packets" + (statistics.roundTripTime.map { ", round trip \(formatted($0 * 1000, digits: 1)) ms" } ?? ""))
        }
        if let impairment = statistics.impairment {
            lines.append("  impaired \(impairment.submitted) packets in, \(impairment.delivered) out: \(impairment.droppedByLoss) lost, "
                         + "\(impairment.droppedByQueue) dropped by the queue, \(impairment.duplicated) duplicated, \(impairment.reordered) reordered")
        }
        return lines.joined(separator: "\n")
    }

    /// `rtp://HOST:PORT (CODEC, payload type N, SSRC N)`, `srtp (SUITE)://...` when protected.
    private static func describe(_ rtp: RTPSenderHandle) -> String {
        let scheme = rtp.destination.srtp.map { "srtp (\($0.profile.sdesName))" } ?? "rtp"
        return "\(scheme)://\(rtp.destination.address) (\(rtp.codec), payload type \(rtp.payloadType), SSRC \(rtp.ssrc))"
    }
}

/// Runs `body` with Ctrl-C cancelling `graph` and a progress line on stderr; maps the outcomes to
/// one-line errors and exit codes.
func runInterruptibly<Result>(_ graph: Graph, quiet: Bool, progress: @escaping @Sendable () -> String,
                              _ body: () throws -> Result) throws -> Result {
    let interrupt = cancelOnInterrupt(graph)
    defer { interrupt.cancel() }
    let ticker = quiet ? nil : DispatchSource.makeTimerSource(queue: .global())
    ticker?.schedule(deadline: .now() + 2, repeating: 2)
    ticker?.setEventHandler { printError(progress()) }
    ticker?.resume()
    defer { ticker?.cancel() }
    do {
        return try body()
    } catch GraphError.cancelled {
        printError("sluice: stopped: \(progress())")
        throw ExitCode(130)
    } catch {
        printError("sluice: \(error) (\(progress()))")
        throw ExitCode.failure
    }
}
