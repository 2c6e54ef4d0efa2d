import ArgumentParser
import Foundation
import Glibc
import Sluice

/// Local video constraints, getUserMedia style, shared by `offer` and `answer`.
struct ConstraintArguments: ParsableArguments {
    @Option(help: "Largest picture to send, e.g. 1280x720 (also the ideal).", transform: parseSize)
    var maxSize: [Int] = [1280, 720]

    @Option(help: "Smallest acceptable picture, e.g. 320x180.", transform: parseSize)
    var minSize: [Int]?

    @Option(parsing: .unconditional, help: "Highest frame rate to send (also the ideal).")
    var maxFPS: Double = 30

    @Option(parsing: .unconditional, help: "Lowest acceptable frame rate.")
    var minFPS: Double?

    @Option(help: "Put this codec first (vp8, h264, opus), as the offer's preference.")
    var prefer: String?

    var constraints: VideoConstraints {
        VideoConstraints(width: .init(min: minSize?[0], ideal: maxSize[0], max: maxSize[0]),
                         height: .init(min: minSize?[1], ideal: maxSize[1], max: maxSize[1]),
                         frameRate: .init(min: minFPS, ideal: maxFPS, max: maxFPS))
    }

    var capabilities: [CodecCapability] {
        let all = CodecRegistry.builtIn.capabilities
        return prefer.map { all.preferring(CodecName(rawValue: $0)) } ?? all
    }

    func validate() throws {
        guard maxFPS > 0, minFPS.map({ $0 > 0 && $0 <= maxFPS }) ?? true else {
            throw ValidationError("frame rates must be positive, --min-fps at most --max-fps")
        }
        if let prefer, !CodecRegistry.builtIn.capabilities.contains(where: { $0.codec == CodecName(rawValue: prefer) }) {
            throw ValidationError("cannot prefer '\(prefer)': the built-in codecs are VP8, H264 and OPUS")
        }
    }
}

struct Offer: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print an SDP offer (RFC 3264) of Sluice's codecs.",
        discussion: """
            The offer lists the built-in codecs in the registry's order (or with
            --prefer first): Opus, VP8 and H.264 (constrained baseline, modes 1 and
            0), with RTX, NACK/PLI/FIR feedback, rtcp-mux and BUNDLE.

            Examples:
              sluice offer > offer.sdp
              sluice offer --prefer h264 --video-only
            """)

    @OptionGroup var local: ConstraintArguments

    @Flag(help: "Offer video only.")
    var videoOnly = false

    @Flag(help: "Offer audio only.")
    var audioOnly = false

    func validate() throws {
        if videoOnly && audioOnly { throw ValidationError("--video-only and --audio-only exclude each other") }
    }

    func run() throws {
        var options = NegotiationOptions(origin: SDPOrigin(sessionID: UInt64.random(in: 1...UInt64(Int64.max)), sessionVersion: 1))
        options.media = videoOnly ? [.video] : audioOnly ? [.audio] : [.audio, .video]
        options.preferring = local.prefer.map { CodecName(rawValue: $0) }
        print(makeOffer(capabilities: local.capabilities, options: options).serialized(), terminator: "")
    }
}

struct Answer: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print Sluice's SDP answer to an offer, and what was agreed.",
        discussion: """
            Each offered section is answered with the formats both sides have, in the
            offer's order and payload types (H.264 matched by profile and packetization
            mode, the level answered as RFC 6184 says), or rejected with port 0. The
            answer goes to stdout; what was agreed, and the picture size and rate to
            send within both sides' limits (max-fs, max-fr, H.264 level, imageattr,
            framerate), go to stderr.

            Examples:
              sluice answer chrome-offer.sdp > answer.sdp
              sluice answer offer.sdp --max-size 640x360 --max-fps 15
            """)

    @Argument(help: "The offer (.sdp).")
    var offer: String

    @OptionGroup var local: ConstraintArguments

    func run() throws {
        let session = try failingInOneLine(offer) { try SessionDescription(contentsOfFile: offer) }
        var options = NegotiationOptions(origin: SDPOrigin(sessionID: UInt64.random(in: 1...UInt64(Int64.max)), sessionVersion: 1))
        options.preferring = local.prefer.map { CodecName(rawValue: $0) }
        let (answer, results) = makeAnswer(to: session, capabilities: local.capabilities, options: options)
        print(answer.serialized(), terminator: "")
        for result in results {
            let section = "\(result.type)" + (result.mid.map { " (mid \($0))" } ?? "")
            if let reason = result.rejectionReason {
                printError("\(section): rejected: \(reason)")
                continue
            }
            let codecs = result.codecs.map { "\($0.capability.encodingName)/\($0.payloadType)" }.joined(separator: ", ")
            printError("\(section): \(codecs)")
            if let first = result.codecs.first, let limits = first.remoteVideoLimits {
                do {
                    printError("  send \(try chooseVideoFormat(constraints: local.constraints, remote: limits))")
                } catch {
                    printError("  no picture size fits: \(error)")
                }
            }
        }
    }
}
