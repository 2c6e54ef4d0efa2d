// The one temporary folder a pipebench process writes its inputs and outputs into, removed when the
// run ends or is interrupted, so that runs leave nothing behind in the temporary directory.
import Dispatch
import Foundation

/// `pipebench-<pid>/` in the temporary directory: every file a scenario writes goes here.
public enum ScratchFolder {
    /// The folder's path, made on first use and removed when the process exits.
    public static let path: String = {
        let path = NSTemporaryDirectory() + "pipebench-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        atexit { ScratchFolder.remove() }
        return path
    }()

    /// The path of `name` inside the folder.
    public static func file(_ name: String) -> String { path + "/" + name }

    /// Removes the folder and everything in it.
    public static func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// On SIGINT or SIGTERM, removes the folder and exits with 128 + the signal's number, as a shell
    /// reports a process the signal ended. Call once, before the first scenario.
    public static func removeOnInterrupt() {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                remove()
                exit(128 + number)
            }
            source.resume()
            interruptSources.append(source)
        }
    }

    /// The signal sources: kept for the process's life.
    nonisolated(unsafe) private static var interruptSources: [any DispatchSourceSignal] = []
}
