import SystemPackage

/// Appends whole units (headers, frames) to a new file and patches bytes already written.
///
/// An append that fails part-way is cut back off, so the file always ends after the last whole unit.
final class FileWriter {
    let path: String
    /// Bytes in the file.
    private(set) var length = 0
    private var descriptor: FileDescriptor?

    /// Creates `path`, or empties it if it exists.
    init(path: String) throws {
        self.path = path
        do {
            descriptor = try FileDescriptor.open(
                FilePath(path), .writeOnly, options: [.create, .truncate, .closeOnExec],
                permissions: [.ownerReadWrite, .groupRead, .otherRead])
        } catch {
            throw MediaFileError.cannotOpen(path: path, reason: "\(error)")
        }
    }

    deinit { try? descriptor?.close() }

    var isOpen: Bool { descriptor != nil }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        let descriptor = try openDescriptor()
        do {
            try descriptor.writeAll(bytes)
            length += bytes.count
        } catch {
            _ = try? descriptor.resize(to: Int64(length))
            _ = try? descriptor.seek(offset: Int64(length), from: .start)
            throw MediaFileError.writeFailed(path: path, reason: "\(error)")
        }
    }

    func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try append($0) }
    }

    /// Overwrites bytes at `offset` (within the file) without moving the append position.
    func patch(_ bytes: [UInt8], at offset: Int) throws {
        let descriptor = try openDescriptor()
        do {
            try descriptor.writeAll(toAbsoluteOffset: Int64(offset), bytes)
        } catch {
            throw MediaFileError.writeFailed(path: path, reason: "\(error)")
        }
    }

    /// Closes the file; later calls do nothing.
    func close() throws {
        guard let descriptor else { return }
        self.descriptor = nil
        do {
            try descriptor.close()
        } catch {
            throw MediaFileError.writeFailed(path: path, reason: "\(error)")
        }
    }

    private func openDescriptor() throws -> FileDescriptor {
        guard let descriptor else { throw MediaFileError.writeFailed(path: path, reason: "file is closed") }
        return descriptor
    }
}
