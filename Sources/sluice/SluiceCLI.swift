import ArgumentParser
import Dispatch
import Glibc
import Sluice

/// The `sluice` command: file-to-file transcoding, sending and receiving RTP.
@main
struct SluiceCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sluice",
        abstract: "Sluice media engine: transcode, inspect and run pipelines of media files, capture and play on devices, send and receive RTP streams, serve WebRTC peers, negotiate SDP, list codecs.",
        subcommands: [Transcode.self, Run.self, Inspect.self, Send.self, Receive.self, Serve.self, Offer.self, Answer.self, Devices.self, Codecs.self])

    /// Errors end in one line on stderr and a non-zero status; --help prints in full.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let code as ExitCode {
            Glibc.exit(code.rawValue)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                Glibc.exit(0)
            }
            let message = message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            printError("sluice: \(message) (see 'sluice --help')")
            Glibc.exit(code.rawValue)
        }
    }
}

/// Ctrl-C cancels `graph` (its outputs stay valid) instead of ending the process; keep the source
/// while the graph runs.
func cancelOnInterrupt(_ graph: Graph) -> any DispatchSourceSignal {
    let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
    signal(SIGINT, SIG_IGN)
    interrupt.setEventHandler { graph.cancel() }
    interrupt.resume()
    return interrupt
}

/// `body`'s result; an error it throws ends the command with one line on stderr, after `subject`
/// (a file name) when given, and a failure status.
func failingInOneLine<T>(_ subject: String? = nil, _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch {
        printError("sluice: " + (subject.map { "\($0): " } ?? "") + "\(error)")
        throw ExitCode.failure
    }
}

/// Writes one line to stderr.
func printError(_ text: String) {
    writeToStandardError(text + "\n")
}

func writeToStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in
        var rest = UnsafeRawBufferPointer(bytes)
        while !rest.isEmpty {
            let written = write(STDERR_FILENO, rest.baseAddress, rest.count)
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            rest = UnsafeRawBufferPointer(rebasing: rest[written...])
        }
    }
}
