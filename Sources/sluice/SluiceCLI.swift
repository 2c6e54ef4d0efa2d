import ArgumentParser
import Glibc

/// The `sluice` command: file-to-file transcoding, sending and receiving RTP.
@main
struct SluiceCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sluice",
        abstract: "Sluice media engine: transcode media files, capture and play on devices, send and receive RTP streams, negotiate SDP.",
        subcommands: [Transcode.self, Send.self, Receive.self, Serve.self, Offer.self, Answer.self, Devices.self, Codecs.self])

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
