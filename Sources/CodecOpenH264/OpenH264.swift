import COpenH264
import MediaCodecs
import MediaCore

/// Facts about the linked OpenH264, and the error mapping shared by its encoder and decoder.
public enum OpenH264 {
    /// The version of the linked library, e.g. "2.3.1".
    public static var version: String {
        var version = OpenH264Version()
        WelsGetCodecVersionEx(&version)
        return "\(version.uMajor).\(version.uMinor).\(version.uRevision)"
    }

    /// The `DECODING_STATE` bits set in `raw`, by name ("dsRefLost|dsBitstreamError"); unknown bits in hex.
    public static func describe(decodingState raw: UInt32) -> String {
        if raw == dsErrorFree.rawValue { return "dsErrorFree" }
        var names: [String] = []
        var known: UInt32 = 0
        for (bit, name) in decodingStateNames where raw & bit.rawValue != 0 {
            names.append(name)
            known |= bit.rawValue
        }
        if raw & ~known != 0 { names.append("0x" + String(raw & ~known, radix: 16)) }
        return names.joined(separator: "|")
    }

    /// The name of a `CM_RETURN` code, which the initialisation and option calls return.
    static func describe(returnCode code: Int) -> String {
        switch UInt32(truncatingIfNeeded: code) {
        case cmResultSuccess.rawValue: return "cmResultSuccess"
        case cmInitParaError.rawValue: return "cmInitParaError (invalid parameters)"
        case cmUnknownReason.rawValue: return "cmUnknownReason"
        case cmMallocMemeError.rawValue: return "cmMallocMemeError (out of memory)"
        case cmInitExpected.rawValue: return "cmInitExpected (not initialised)"
        case cmUnsupportedData.rawValue: return "cmUnsupportedData"
        default: return "code \(code)"
        }
    }

    private static let decodingStateNames: [(DECODING_STATE, String)] = [
        (dsFramePending, "dsFramePending"), (dsRefLost, "dsRefLost"), (dsBitstreamError, "dsBitstreamError"),
        (dsDepLayerLost, "dsDepLayerLost"), (dsNoParamSets, "dsNoParamSets"),
        (dsDataErrorConcealed, "dsDataErrorConcealed"), (dsRefListNullPtrs, "dsRefListNullPtrs"),
        (dsInvalidArgument, "dsInvalidArgument"), (dsInitialOptExpected, "dsInitialOptExpected"),
        (dsOutOfMemory, "dsOutOfMemory"), (dsDstBufNeedExpan, "dsDstBufNeedExpan"),
    ]

    /// Throws `CodecError.library` unless a `CM_RETURN`-style result is 0.
    static func check(_ code: Int, _ operation: String, log: Log? = nil) throws {
        guard code != 0 else { return }
        var message = describe(returnCode: code)
        if let detail = log?.take() { message += ": " + detail }
        throw CodecError.library(name: "openh264", operation: operation, code: Int32(truncatingIfNeeded: code),
                                 message: message)
    }

    /// Collects the messages OpenH264 logs at error level, so that a failure can carry them
    /// (instead of them going to stderr). OpenH264 may log from its own threads.
    final class Log: Sendable {
        private let messages = Locked<[String]>([])

        /// Forgets earlier messages, keeping the storage.
        func clear() { messages.withLock { $0.removeAll(keepingCapacity: true) } }

        func append(_ message: String) {
            messages.withLock { list in
                if list.count < 8 { list.append(message.trimmingSuffix()) }
            }
        }

        /// The messages since the last `clear()`, joined, or `nil` when there are none; clears.
        func take() -> String? {
            messages.withLock { list in
                defer { list.removeAll(keepingCapacity: true) }
                return list.isEmpty ? nil : list.joined(separator: "; ")
            }
        }

        /// A `WelsTraceCallback` that appends to the `Log` passed as its context.
        static let callback: WelsTraceCallback = { context, _, text in
            guard let context, let text else { return }
            Unmanaged<Log>.fromOpaque(context).takeUnretainedValue().append(String(cString: text))
        }
    }
}

extension String {
    fileprivate func trimmingSuffix() -> String {
        var text = Substring(self)
        while let last = text.last, last.isWhitespace { text = text.dropLast() }
        return String(text)
    }
}
