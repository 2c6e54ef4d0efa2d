// The program the "Transcode a file" tutorial builds (Sources/Sluice/Sluice.docc/Tutorials; the
// `// @step` marks say which step adds what: tools/tutorial-steps).
//   example-transcode INPUT OUTPUT      e.g. example-transcode clip.mp4 clip.webm
import Foundation
import Sluice

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: example-transcode INPUT OUTPUT (e.g. clip.mp4 clip.webm)\n".utf8))
    exit(2)
}
let input = arguments[0], output = arguments[1]
// @step 3

// What to make: the codec follows the output's extension; the size and bitrate are ours.
var options = TranscodeOptions()
options.size = (640, 360)
options.bitrate = 1_000_000

do {
    // The whole graph is built and its formats agreed here: a wrong pairing fails before any work.
    let job = try Transcoder(input: input, output: output, options: options)
    print("\(input) -> \(output): \(job.inputFormat.map { "\($0)" } ?? "?") -> \(job.outputFormat.map { "\($0)" } ?? "?")")
    // @step 4

    // Progress from another thread while the graph runs.
    let progress = Thread {
        while !Thread.current.isCancelled {
            Thread.sleep(forTimeInterval: 1)
            print("  \(job.framesDone) of \(job.expectedFrames.map(String.init) ?? "?") frames")
        }
    }
    progress.start()
    defer { progress.cancel() }
    // @end

    let summary = try job.run()
    print("\(summary.frames) frames, \(Int(summary.framesPerSecond)) frames/s, \(Int(summary.bitrate / 1000)) kbit/s")
} catch {
    // A damaged input names the file and the offset; what was written until then stays playable.
    FileHandle.standardError.write(Data("example-transcode: \(error)\n".utf8))
    exit(1)
}
// @end
