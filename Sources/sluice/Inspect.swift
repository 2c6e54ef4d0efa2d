import ArgumentParser
import Sluice

/// `sluice inspect`: a thin adapter over `MediaInspector`.
struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Describe a media file or an SDP: streams, codecs, sizes, rates, durations, frame and keyframe counts, bitrates.",
        discussion: """
            Media files are read to the end through Sluice's own readers: .y4m, .ivf, .wav,
            .h264 (Annex-B), .opus/.ogg (Ogg Opus), and .mp4/.mov, .webm, .mkv through libavformat.
            For an .sdp: the media sections, their payload types with rtpmap and fmtp, the
            direction, and whether SDES keys (a=crypto) or a DTLS fingerprint are present;
            then what Sluice would answer to each section as an offer (a WebRTC offer as
            its peer connection answers, any other as 'sluice answer' does): each codec
            [taken] or [refused: why], the one it would use, or why the section is refused.
            A damaged or truncated file prints what was read, then the error naming the
            file and the byte offset, and exits with status 1.

            Examples:
              sluice inspect clip.mp4
              sluice inspect samples/big-buck-bunny-640x360.ivf --json
              sluice inspect offer.sdp
            """)

    @Argument(help: "The media file or .sdp to inspect.")
    var file: String

    @Flag(help: "Print JSON with stable keys instead of text.")
    var json = false

    func run() throws {
        let result = try failingInOneLine { try MediaInspector.inspect(file) }
        print(json ? result.json.text() : result.text)
        if let error = result.error {
            printError("sluice: \(error)")
            throw ExitCode.failure
        }
    }
}
