import Foundation
import Testing
import TestSupport

/// Audio and video of `sluice transcode` stay in sync, measured by content: the input is black with a
/// white flash at 1, 2 and 3 s and silent with a 1 kHz beep at the same moments; ffmpeg decodes the
/// output as a player would (one timeline for both streams, each codec's delay taken off) and the
/// onsets of flash and beep are compared.
@Suite struct AVSyncTests {
    static let marks = [1.0, 2.0, 3.0]
    /// One frame at 25 fps (40 ms) is the most a viewer could miss; the codec delays a file must state
    /// (Opus's pre-skip, 6.5 ms; AAC's priming, 21 ms) are smaller, so the bound is well under them.
    /// The measurement itself is exact to a sample (audio) and a millisecond (WebM's timestamps).
    static let tolerance = 0.003

    /// A 4 s MP4 (H.264, 160x90 at 25 fps) whose flashes and beeps start at `marks`, each 80 ms long;
    /// `audioDelay` starts the audio that much late, to show the measurement sees it.
    static func makeInput(_ path: String, audioCodec: String, audioDelay: Double = 0) throws {
        let windows = marks.map { "between(t,\($0 - 0.01),\($0 + 0.07))" }.joined(separator: "+")
        let beeps = marks.map { "between(t,\($0),\($0 + 0.08))" }.joined(separator: "+")
        try TestSupport.ffmpeg([
            "-f", "lavfi", "-i", "color=c=black:s=160x90:r=25:d=4,drawbox=c=white:t=fill:enable='\(windows)'",
            "-itsoffset", "\(audioDelay)", "-f", "lavfi", "-i", "aevalsrc='0.5*sin(2*PI*1000*t)*(\(beeps))':s=48000:d=4",
            "-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-profile:v", "baseline", "-g", "25", "-pix_fmt", "yuv420p",
            "-c:a", audioCodec, "-ac", "2", path,
        ])
    }

    /// The onsets (seconds) of the flashes and of the beeps in `path`, decoded by ffmpeg: a frame's
    /// time is its pts (`signalstats` gives its mean luma), a sample's is its position once `aresample`
    /// has put the first sample at 0 on the same timeline.
    static func onsets(in path: String, scratch: URL) throws -> (video: [Double], audio: [Double]) {
        let lumaLog = scratch.file("luma.txt"), pcm = scratch.file("audio.s16")
        try TestSupport.ffmpeg([
            "-i", path,
            "-map", "0:v", "-vf", "signalstats,metadata=mode=print:key=lavfi.signalstats.YAVG:file=\(lumaLog)", "-f", "null", "-",
            "-map", "0:a", "-af", "aresample=async=1:first_pts=0", "-ac", "1", "-ar", "48000", "-f", "s16le", pcm,
        ])
        var flashes: [Double] = [], time: Double?, lit = false
        for line in try String(contentsOfFile: lumaLog, encoding: .utf8).split(separator: "\n") {
            if let range = line.range(of: "pts_time:") {
                time = Double(line[range.upperBound...].prefix { !$0.isWhitespace })
            } else if let range = line.range(of: "YAVG="), let luma = Double(line[range.upperBound...]) {
                // Black is 16 and white 235 in video range.
                if luma > 125, !lit, let time { flashes.append(time) }
                lit = luma > 125
            }
        }
        let samples = try Data(contentsOf: URL(fileURLWithPath: pcm)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        var beeps: [Double] = [], lastLoud = Int.min / 2
        for (index, sample) in samples.enumerated() where abs(Int(sample)) > 4_000 {
            // A beep begins after at least 100 ms below a quarter of its amplitude.
            if index - lastLoud > 4_800 { beeps.append(Double(index) / 48_000) }
            lastLoud = index
        }
        return (flashes, beeps)
    }

    /// Per mark, the beep's onset less the flash's (positive: audio late). Each flash must be within
    /// `flashTolerance` of when it was made.
    static func offsets(in path: String, scratch: URL, flashTolerance: Double = 0.1) throws -> [Double] {
        let (video, audio) = try onsets(in: path, scratch: scratch)
        #expect(video.count == marks.count, "\(path): flashes at \(video)")
        #expect(audio.count == marks.count, "\(path): beeps at \(audio)")
        for (flash, mark) in zip(video, marks) {
            #expect(abs(flash - mark) < flashTolerance, "\(path): flash at \(flash) s, made at \(mark) s")
        }
        return zip(audio, video).map { $0 - $1 }
    }

    @Test(arguments: ["aac", "libopus"], ["webm", "mkv", "mp4"])
    func flashesAndBeepsStayTogether(audioCodec: String, format: String) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let input = dir.file("clip.mp4"), output = dir.file("out.\(format)")
            try Self.makeInput(input, audioCodec: audioCodec)
            let sluice = TestSupport.productsDirectory.appendingPathComponent("sluice").path
            let result = try TestSupport.run(sluice, ["transcode", input, output, "--quiet"])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            let offsets = try Self.offsets(in: output, scratch: dir)
            #expect(offsets.count == Self.marks.count)
            for offset in offsets {
                #expect(abs(offset) < Self.tolerance, "\(audioCodec) -> .\(format): audio \(Int(offset * 1000)) ms from video")
            }
        }
    }

    /// The measurement itself: an input whose audio starts 100 ms late is measured so.
    @Test func aShiftedInputIsMeasuredAsShifted() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let input = dir.file("late.mp4")
            try Self.makeInput(input, audioCodec: "aac", audioDelay: 0.1)
            for offset in try Self.offsets(in: input, scratch: dir) {
                #expect(abs(offset - 0.1) < 0.002, "audio \(offset) s late, made 0.1 s late")
            }
        }
    }
}
