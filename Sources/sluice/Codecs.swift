import ArgumentParser
import Sluice

struct Codecs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List every codec provider: its kind (encoder or decoder), media, codec and rank.",
        discussion: """
            Rank 1 is the provider Sluice uses for its codec and kind unless one is named;
            2 is the next, and so on. Name another with --encoder or --decoder:
              sluice codecs
              sluice codecs --kind decoder
              sluice transcode clip.h264 clip.ivf --decoder openh264
              sluice transcode clip.y4m clip.h264 --encoder openh264
            libavcodec's decoders (ffmpeg) rank first for VP8 and H.264 when the linked
            libavcodec has them.
            """)

    @Option(help: "List only encoders or only decoders: encoder, decoder.")
    var kind: CodecProviderEntry.Kind?

    func run() throws {
        print(Self.table(CodecRegistry.builtIn.providers.filter { kind == nil || $0.kind == kind }))
    }

    /// One line a provider under a header, columns aligned.
    static func table(_ entries: [CodecProviderEntry]) -> String {
        let rows = [["KIND", "MEDIA", "CODEC", "RANK", "PROVIDER"]]
            + entries.map { [$0.kind.rawValue, $0.media.rawValue, $0.codec.rawValue.lowercased(), "\($0.rank)", $0.name] }
        let widths = (0..<5).map { column in rows.map { $0[column].count }.max()! }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count + 2)
            }.joined()
        }.joined(separator: "\n")
    }
}

extension CodecProviderEntry.Kind: ExpressibleByArgument {}
