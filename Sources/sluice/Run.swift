import ArgumentParser
import Foundation
import Sluice

/// `sluice run`: a thin adapter over `TextPipeline`.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Build and run a pipeline written as text, in the manner of gst-launch.",
        discussion: """
            Elements are joined by '!'; properties follow an element as key=value.
            file:PATH reads a file (first in a chain) or writes one (last), by extension.
            name=N names an element; 'N.' starts another chain from its output (after a
            tee, or N.video / N.audio for the streams of a container file), or ends a
            chain into a named output file (its second track).
            Properties are checked against each element's declared options, and formats
            are negotiated before anything runs: a wrong pipeline is refused naming the
            element, the property or the two formats that do not fit.

            Examples:
              sluice run "file:clip.y4m ! vp8enc bitrate=1M ! file:out.ivf"
              sluice run "file:a.ivf ! decode ! scale size=320x180 ! x264enc ! file:o.mp4"
              sluice run "file:a.ivf ! decode ! tee name=t ! vp8enc ! file:b.ivf \\
                          t. ! framerate fps=15 ! openh264enc ! file:c.h264"
              sluice run "file:in.mp4 name=in  in.video ! decode ! vp8enc ! file:o.webm \\
                          name=out  in.audio ! decode ! opusenc ! out."
              sluice run "file:a.wav ! audioconvert rate=48000 ! opusenc ! file:a.ogg"
              sluice run "file:clip.ivf ! rtpsend to=127.0.0.1:5004 impair=loss=5%"
              sluice run "rtpreceive sdp=stream.sdp timeout=5 ! file:received.ivf"
              sluice run "v4l2src device=/dev/video0 size=640x480 fps=30 frames=300 ! vp8enc ! file:cam.ivf"
              sluice run "alsasrc device=default duration=10 ! opusenc ! file:mic.ogg"
              sluice run "file:a.ogg ! decode ! alsasink device=default"
              sluice run "file:clip.ivf ! decode ! file:out.y4m" --dot graph.dot
              sluice run --list
            """)

    @Argument(help: "The pipeline, e.g. \"file:in.y4m ! vp8enc ! file:out.ivf\".")
    var pipeline: String?

    @Flag(help: "List the element kinds and their options.")
    var list = false

    @Option(help: "Write the negotiated graph as Graphviz (caps on the edges) to this file.")
    var dot: String?

    func run() throws {
        if list {
            print(PipelineNodeKinds.listing)
            return
        }
        guard let pipeline else { throw ValidationError("give a pipeline, e.g. \"file:in.y4m ! vp8enc ! file:out.ivf\", or --list") }
        let built = try failingInOneLine { try TextPipeline(pipeline) }
        if let dot {
            do { try built.dot().write(toFile: dot, atomically: true, encoding: .utf8) } catch {
                printError("sluice: \(dot): cannot write: \(error.localizedDescription)")
                throw ExitCode.failure
            }
        }
        let report = try runInterruptibly(built.graph, quiet: false, progress: { built.progress }) { try built.run() }
        var lines = ["ran \(report.nodes.count) nodes in \(formatted(report.elapsed.seconds)) s"]
        for (node, target) in built.outputs {
            lines.append("  \(target): \(report[node]?.itemsIn ?? 0) frames")
        }
        print(lines.joined(separator: "\n"))
    }
}
