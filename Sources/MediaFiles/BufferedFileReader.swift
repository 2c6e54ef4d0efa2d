import SystemPackage

/// Sequential reads from a file through one fixed buffer, so parsing small fields costs no system call
/// each; a read at least as large as the buffer goes straight into the caller's memory.
final class BufferedFileReader {
    let path: String
    /// File offset of the next byte to be handed out.
    private(set) var offset = 0
    private let descriptor: FileDescriptor
    private let buffer: UnsafeMutableRawBufferPointer
    /// `buffer[start..<end]` has been read from the file but not handed out yet.
    private var start = 0
    private var end = 0

    init(path: String, bufferSize: Int = 64 * 1024) throws {
        self.path = path
        do {
            descriptor = try FileDescriptor.open(FilePath(path), .readOnly, options: [.closeOnExec])
        } catch {
            throw MediaFileError.cannotOpen(path: path, reason: "\(error)")
        }
        buffer = .allocate(byteCount: bufferSize, alignment: 64)
    }

    deinit {
        buffer.deallocate()
        try? descriptor.close()
    }

    private var buffered: Int { end - start }

    /// Fills `destination`; returns fewer bytes than it holds only at the end of the file.
    func read(into destination: UnsafeMutableRawBufferPointer) throws -> Int {
        var copied = 0
        while copied < destination.count {
            let wanted = destination.count - copied
            if buffered == 0 && wanted >= buffer.count {
                let count = try readFromFile(into: UnsafeMutableRawBufferPointer(rebasing: destination[copied...]))
                if count == 0 { break }
                copied += count
                offset += count
            } else {
                if buffered == 0, try refill() == 0 { break }
                let count = Swift.min(buffered, wanted)
                UnsafeMutableRawBufferPointer(rebasing: destination[copied..<(copied + count)])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[start..<(start + count)]))
                start += count
                copied += count
                offset += count
            }
        }
        return copied
    }

    /// The next `count` bytes; fewer only at the end of the file.
    func read(count: Int) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: count) { storage, initialized in
            initialized = try read(into: UnsafeMutableRawBufferPointer(storage))
        }
    }

    /// Passes over `count` bytes; returns how many there were before the end of the file.
    func skip(_ count: Int) throws -> Int {
        var skipped = 0
        while skipped < count {
            if buffered == 0, try refill() == 0 { break }
            let step = Swift.min(buffered, count - skipped)
            start += step
            skipped += step
            offset += step
        }
        return skipped
    }

    /// The bytes up to and including the next newline. The result does not end in a newline when the file
    /// ends first, or when `maxLength` bytes came without one; it is empty only at the end of the file.
    func readLine(maxLength: Int) throws -> [UInt8] {
        precondition(maxLength <= buffer.count, "line limit exceeds the read buffer")
        while true {
            let searched = Swift.min(buffered, maxLength)
            if let newline = buffer[start..<(start + searched)].firstIndex(of: UInt8(ascii: "\n")) {
                return take(newline + 1 - start)
            }
            if buffered >= maxLength { return take(maxLength) }
            if try refill() == 0 { return take(buffered) }
        }
    }

    private func take(_ count: Int) -> [UInt8] {
        let bytes = [UInt8](buffer[start..<(start + count)])
        start += count
        offset += count
        return bytes
    }

    /// Moves the unread bytes to the front of the buffer and reads more behind them; returns the bytes added.
    private func refill() throws -> Int {
        if start > 0 {
            if buffered > 0 {
                buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: buffered)
            }
            end -= start
            start = 0
        }
        let count = try readFromFile(into: UnsafeMutableRawBufferPointer(rebasing: buffer[end...]))
        end += count
        return count
    }

    private func readFromFile(into destination: UnsafeMutableRawBufferPointer) throws -> Int {
        do {
            return try descriptor.read(into: destination)
        } catch {
            throw MediaFileError.readFailed(path: path, offset: offset + buffered, reason: "\(error)")
        }
    }
}
