import Testing

@testable import MediaFiles

@Suite struct MediaFileErrorTests {
    @Test func descriptionsAreOneLineNamingFileAndOffset() {
        #expect(MediaFileError.truncated(path: "clip.y4m", offset: 115254, detail: "frame 3 needs 115200 bytes, 4000 present")
            .description == "clip.y4m: truncated at byte 115254: frame 3 needs 115200 bytes, 4000 present")
        #expect(MediaFileError.corrupt(path: "a.ivf", offset: 0, detail: "not an IVF file").description
            == "a.ivf: corrupt at byte 0: not an IVF file")
        #expect(MediaFileError.unsupported(path: "a.wav", detail: "24-bit PCM").description == "a.wav: unsupported: 24-bit PCM")
        #expect(MediaFileError.cannotOpen(path: "x", reason: "No such file or directory").description
            == "x: cannot open: No such file or directory")
        #expect(MediaFileError.writeFailed(path: "x", reason: "two\nlines").description == "x: write failed: two lines")
        #expect(MediaFileError.readFailed(path: "x", offset: 7, reason: "I/O error").path == "x")
    }

    @Test func quotingEscapesUnprintableBytes() {
        #expect(quoted(Array("FRAME\n".utf8)) == "\"FRAME\\x0A\"")
        #expect(quoted([0x00, 0x41, 0xFF]) == "\"\\x00A\\xFF\"")
    }
}
