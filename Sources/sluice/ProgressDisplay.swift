import Dispatch
import Glibc
import Sluice

/// Shows a transcode's progress on stderr: a bar redrawn in place on a terminal, a plain line
/// every two seconds otherwise (logs, CI).
final class ProgressDisplay: @unchecked Sendable {
    private let transcoder: Transcoder
    private let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "progress"))
    private let interactive = isatty(STDERR_FILENO) == 1
    private let startTime = SystemClock().now
    private var ticks = 0

    init(transcoder: Transcoder) { self.transcoder = transcoder }

    func start() {
        timer.schedule(deadline: .now() + .milliseconds(250), repeating: .milliseconds(250))
        timer.setEventHandler { [self] in tick() }
        timer.resume()
    }

    func stop() {
        timer.cancel()
        if interactive && ticks > 0 { writeToStandardError("\r\u{1B}[K") }
    }

    private func tick() {
        ticks += 1
        let done = transcoder.framesDone
        let elapsed = (SystemClock().now - startTime).seconds
        let fps = elapsed > 0 ? Double(done) / elapsed : 0
        let total = transcoder.expectedFrames
        if interactive {
            var bar = ""
            if let total, total > 0 {
                let width = 30, filled = min(width, done * width / total)
                bar = "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            }
            writeToStandardError("\r\(bar)\(done)\(total.map { "/\($0)" } ?? "") frames  \(formatted(fps, digits: 1)) fps  "
                  + "\(formatted(elapsed, digits: 1)) s\u{1B}[K")
        } else if ticks % 8 == 0 {
            writeToStandardError("progress: \(done)\(total.map { "/\($0)" } ?? "") frames, \(formatted(fps, digits: 1)) fps, "
                  + "\(formatted(elapsed, digits: 1)) s\n")
        }
    }
}
