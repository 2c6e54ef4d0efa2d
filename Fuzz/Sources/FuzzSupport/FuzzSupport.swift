// The glue between libFuzzer and the fuzz targets: the driver entry point, the input callback, and a
// reader that cuts an input into the fields a structured target needs.
#if canImport(Glibc)
import Glibc
#endif

@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(_ argc: UnsafeMutablePointer<CInt>,
                       _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                       _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// The target's test, set once by `fuzzMain` before libFuzzer calls it (on one thread).
nonisolated(unsafe) private var test: ((UnsafeRawBufferPointer) -> Void)?

/// libFuzzer's entry for one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    test?(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// Runs libFuzzer with the process's arguments, calling `body` with each input; returns its exit
/// status. A target's `<Module>_main` (the symbol SwiftPM names its entry point) calls it.
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                     _ body: @escaping (UnsafeRawBufferPointer) -> Void) -> CInt {
    test = body
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments, testOneInput)
}

/// Reads an input front to back as the fields of a structured case; past the end every read gives
/// zeros (or nothing), so a target never has to check the length.
public struct FuzzReader {
    private let bytes: UnsafeRawBufferPointer
    private var position = 0

    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Whether unread bytes remain.
    public var hasMore: Bool { position < bytes.count }
    /// The unread bytes.
    public var rest: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[position...]) }

    public mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    public mutating func uint16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }
    public mutating func uint32() -> UInt32 { UInt32(uint16()) << 16 | UInt32(uint16()) }
    public mutating func bool() -> Bool { byte() & 1 == 1 }

    /// Up to `count` bytes (fewer at the end).
    public mutating func bytes(_ count: Int) -> UnsafeRawBufferPointer {
        let end = min(bytes.count, position + max(0, count))
        defer { position = end }
        return UnsafeRawBufferPointer(rebasing: bytes[position..<end])
    }
}

/// The input written to a file of this process, for readers that take a path; returns its path.
/// The file is rewritten for every input (in /dev/shm when there is one, to stay off the disk).
public func writeInputFile(_ bytes: UnsafeRawBufferPointer, suffix: String) -> String {
    let folder = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
    let path = "\(folder)/sluice-fuzz-\(getpid())\(suffix)"
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(descriptor >= 0, "cannot write \(path)")
    var written = 0
    while written < bytes.count, let base = bytes.baseAddress {
        let count = write(descriptor, base + written, bytes.count - written)
        precondition(count > 0, "cannot write \(path)")
        written += count
    }
    close(descriptor)
    return path
}

/// Runs libFuzzer on a file reader as `sluice` uses one: each input is written to a file named with
/// `suffix` and opened with `open` (given the path and the input); then `next` is called until it gives nil or throws (at most 64
/// times, so that a long file does not slow the fuzzer down), each item going to `use`.
public func fuzzFileReader<Reader, Item>(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, suffix: String,
    open: @escaping (String, UnsafeRawBufferPointer) throws -> Reader, next: @escaping (Reader) throws -> Item?,
    use: @escaping (Item) -> Void = { _ in }
) -> CInt {
    fuzzMain(argc, argv) { bytes in
        guard let reader = try? open(writeInputFile(bytes, suffix: suffix), bytes) else { return }
        for _ in 0..<64 {
            guard let item = try? next(reader) else { return }
            use(item)
        }
    }
}

/// A sum of the bytes, which makes the sanitizer check that all of them can be read.
public func touch(_ bytes: UnsafeRawBufferPointer) -> UInt8 { bytes.reduce(0, &+) }
