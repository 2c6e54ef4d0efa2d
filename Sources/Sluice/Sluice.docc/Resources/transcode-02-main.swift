// The program the "Transcode a file" tutorial builds (Sources/Sluice/Sluice.docc/Tutorials).
//   example-transcode INPUT OUTPUT      e.g. example-transcode clip.mp4 clip.webm
import Foundation
import Sluice

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: example-transcode INPUT OUTPUT (e.g. clip.mp4 clip.webm)\n".utf8))
    exit(2)
}
let input = arguments[0], output = arguments[1]
