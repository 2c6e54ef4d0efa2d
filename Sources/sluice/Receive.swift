import ArgumentParser
import Foundation
import Glibc
import Sluice

struct Receive: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Receive the RTP streams that a session description (SDP) describes, into a file.",
        discussion: """
            The SDP may be one that 'sluice send --sdp' or 'ffmpeg -sdp_file' wrote.
            Its first section of the output's kind (video for .y4m/.ivf/.h264,
            audio for .wav/.opus) is received on the port it names. .ivf, .h264
            and .opus get the stream as it came; .y4m and .wav get it decoded.
            A container (.webm, .mkv, .mp4) gets the first video section and the
            first audio section, each as it came, in one file: audio and video
            of a call together (.webm takes VP8 and Opus, .mp4 H.264 and Opus,
            .mkv either video codec), placed on one timeline by the sender's
            RTCP sender reports (lip sync), or each track at its first frame
            when a stream has no report within 2 s.
            Packets are put back in order in a jitter buffer, lost ones asked for
            again (NACK) and keyframes requested (PLI) after a loss: no frame whose
            references are missing is written. A video stream begins at its first
            keyframe; lost audio is concealed.

            Receiving stops at the sender's BYE, after --frames (of the video, when
            there is video), --duration, or --timeout seconds without a frame; the
            streams of one file stop together at a limit, and once one stream said
            BYE the others stop after 1 s without a frame.

            Examples:
              sluice receive stream.sdp out.ivf
              sluice receive stream.sdp out.y4m --frames 300
              sluice receive stream.sdp out.y4m --decoder openh264
              sluice receive audio.sdp out.wav --duration 10
              sluice receive call.sdp call.webm       (audio and video: VP8 + Opus)
              sluice receive call.sdp call.mkv --duration 60
            """)

    @Argument(help: "The session description (.sdp) of the stream.")
    var sdp: String

    @Argument(help: "The file to write (.y4m, .ivf, .h264, .wav, .opus; .webm, .mkv, .mp4 for audio and video together).")
    var output: String

    @Option(parsing: .unconditional, help: "Stop after this many frames.")
    var frames: Int?

    @Option(parsing: .unconditional, help: "Stop this many seconds after the first frame.")
    var duration: Double?

    @Option(parsing: .unconditional, help: "Stop after this many seconds without a frame (also the longest wait for the first keyframe).")
    var timeout: Double = 10

    @Option(name: .customLong("min-delay"), parsing: .unconditional, help: "Least jitter-buffer delay, in milliseconds.")
    var minimumDelay = 10

    @Option(name: .customLong("max-delay"), parsing: .unconditional, help: "Most jitter-buffer delay, in milliseconds.")
    var maximumDelay = 1000

    @Option(help: "Video decoder implementation for .y4m output: ffmpeg (libavcodec), openh264 (H.264) or libvpx (VP8). Default: the preferred one (see 'sluice codecs').")
    var decoder: String?

    @Flag(name: .customLong("no-nack"), help: "Do not ask for lost packets again.")
    var noNACK = false

    @Flag(help: "Print no progress, only the summary.")
    var quiet = false

    func validate() throws {
        if let frames, frames < 1 { throw ValidationError("--frames must be at least 1") }
        if let duration, !(duration > 0) { throw ValidationError("--duration must be positive") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        guard minimumDelay >= 0, maximumDelay >= minimumDelay else {
            throw ValidationError("--min-delay and --max-delay must satisfy 0 <= min <= max")
        }
    }

    func run() throws {
        let receiver: RTPReceivePipeline
        do {
            let session = try SessionDescription(contentsOfFile: sdp)
            var options = ReceiveOptions()
            options.limits = RTPReceiveLimits(frames: frames, duration: duration.map { .seconds($0) }, silence: .seconds(timeout))
            options.minimumDelay = .milliseconds(Int64(minimumDelay))
            options.maximumDelay = .milliseconds(Int64(maximumDelay))
            options.nack = !noNACK
            options.decoderName = decoder
            let streams = try Self.sections(of: session, for: try Container(path: output))
                .map { try RTPStreamDescription(media: $0, in: session) }
            receiver = try RTPReceivePipeline(streams: streams, output: output, options: options)
        } catch {
            printError("sluice: \(sdp): \(error)")
            throw ExitCode.failure
        }
        if !quiet {
            for (stream, address) in zip(receiver.streams, receiver.localAddresses) {
                printError("listening on \(address) for \(stream.codec) (payload type \(stream.payloadType))")
            }
        }
        _ = try runInterruptibly(receiver.graph, quiet: quiet, progress: {
            receiver.streams.indices.map { "received \(receiver.framesDone(ofStream: $0)) \(receiver.streams[$0].codec == .opus ? "packets" : "frames")" }
                .joined(separator: ", ")
        }) {
            try receiver.run()
        }
        print(report(receiver))
    }

    /// The sections to receive into `container`: its kind's first, or for a container file the first
    /// video section and the first audio section that it has.
    static func sections(of session: SessionDescription, for container: Container) throws -> [MediaDescription] {
        let kinds = container.containerFormat != nil ? ["video", "audio"] : [container.isVideo ? "video" : "audio"]
        let sections = kinds.compactMap { kind in session.media.first { $0.type == kind } }
        guard !sections.isEmpty else { throw SessionDescriptionError.noMedia(kind: kinds.joined(separator: " or ")) }
        return sections
    }

    private func report(_ receiver: RTPReceivePipeline) -> String {
        var lines: [String] = []
        for (index, stream) in receiver.streams.enumerated() {
            let scheme = stream.srtp.map { "srtp (\($0.profile.sdesName))" } ?? "rtp"
            let address = receiver.localAddresses[index]
            lines.append("received \(scheme)://\(address) -> \(output) (\(receiver.endReason(ofStream: index) ?? "stopped"))")
            lines += report(receiver, stream: index).map { "  " + $0 }
            if let synchronized = receiver.synchronizedBySenderReports, let offset = receiver.timelineOffset(ofStream: index) {
                lines.append("  timeline starts at \(String(format: "%.3f", offset)) s "
                             + (synchronized ? "(by the sender reports)" : "(at its first frame: no sender report)"))
            }
        }
        let decoding = receiver.decoderStatistics()
        if decoding.corrupt > 0 || decoding.skipped > 0 {
            lines.append("  errors   \(decoding.corrupt) frames the decoder rejected, \(decoding.skipped) skipped")
        }
        return lines.joined(separator: "\n")
    }

    private func report(_ receiver: RTPReceivePipeline, stream index: Int) -> [String] {
        let statistics = receiver.statistics(ofStream: index)
        let format = receiver.outputFormats.indices.contains(index) ? receiver.outputFormats[index] : nil
        var lines = ["stream   \(receiver.streams[index].codec), SSRC \(statistics.ssrc.map(String.init) ?? "-"), "
                     + "\(format.map { "\($0)" } ?? "?")"]
        lines.append("packets  \(statistics.packetsReceived) (\(statistics.bytesReceived) bytes) of the stream")
        lines.append("dropped  \(statistics.malformedPackets) not RTP, \(statistics.oversizedPackets) oversized, "
                     + "\(statistics.foreignPackets) of other streams, \(statistics.probationPackets) of sources on probation, "
                     + "\(statistics.foreignRTCP) RTCP of other sources, \(statistics.malformedRTCP) malformed RTCP"
                     + (statistics.unprotectFailures > 0 ? ", \(statistics.unprotectFailures) failed SRTP checks" : "")
                     + (statistics.kernelDrops.map { $0 > 0 ? "; \($0) by the kernel, unread (its receive buffer was full: this receiver fell behind)" : "" } ?? ""))
        if let jitter = statistics.jitterBuffer {
            lines.append("frames   \(receiver.framesDone(ofStream: index)) written, \(jitter.framesReleased) complete, \(jitter.framesDropped) dropped "
                         + "(incomplete or waiting for a keyframe)")
            lines.append("loss     \(jitter.lost) lost, \(jitter.recovered) recovered of \(jitter.nacked) NACKed, \(jitter.late) late, "
                         + "\(jitter.duplicates) duplicates, \(jitter.discarded) discarded")
            lines.append("timing   jitter \(formatted(jitter.jitterSeconds * 1000, digits: 1)) ms, delay \(formatted(jitter.targetDelay.seconds * 1000, digits: 1)) ms")
        }
        if let srtp = statistics.srtp {
            lines.append("srtp     \(srtp.unprotectedPackets) packets checked and decrypted, \(srtp.authenticationFailures) failed "
                         + "authentication, \(srtp.replayedPackets) replayed (all dropped)")
        }
        lines.append("rtcp     \(statistics.senderReports) sender reports, \(statistics.receiverReports) receiver reports sent, "
                     + "\(statistics.nacksSent) NACKs, \(statistics.keyframeRequestsSent) keyframe requests")
        return lines
    }
}
