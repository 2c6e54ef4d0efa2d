import ArgumentParser
import Glibc

/// The `sluice` command: file-to-file transcoding now; sending and receiving come later.
@main
struct SluiceCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sluice",
        abstract: "Sluice media engine: transcode media files.",
        subcommands: [Transcode.self])

    /// Errors end in one line on stderr and a non-zero status; --help prints in full.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let code as ExitCode {
            exit(code.rawValue)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                exit(0)
            }
            let message = message(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            printError("sluice: \(message) (see 'sluice --help')")
            exit(code.rawValue)
        }
    }
}

func printError(_ text: String) {
    fputs(text + "\n", stderr)
}
