import CSRTP
import MediaSDP

/// Why a packet was not protected or unprotected, or a session not made. Library failures keep
/// libsrtp's `srtp_err_status_t` code (`libsrtpCode`).
public enum SRTPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The authentication tag does not match: tampered, wrong key, or not SRTP (RFC 3711 §3.3 step 6).
    case authenticationFailed
    /// The packet index was seen already, or is older than the replay window (`tooOld`) (RFC 3711 §3.3.2).
    case replayed(tooOld: Bool)
    /// The buffer has `available` bytes; the packet and what protection adds need `needed`.
    case bufferTooSmall(needed: Int, available: Int)
    /// The key material does not fit the profile, or does not parse.
    case badKey(SRTPKeyError)
    /// The replay window is outside what libsrtp supports (64 to 32767 packets).
    case invalidReplayWindow(Int)
    /// `protect` on a receiving session or `unprotect` on a sending one.
    case wrongDirection
    /// The packet is too short for its header, CSRCs, extension, index or tag (RFC 3550 §5.1, RFC 3711 §3.1).
    case malformed(String)
    /// Any other library failure: `code` is libsrtp's `srtp_err_status_t` or OpenSSL's error code,
    /// `operation` the call.
    case library(code: Int32, operation: String)

    /// libsrtp's status code behind this error, nil when Sluice found the fault before calling it.
    public var libsrtpCode: Int32? {
        switch self {
        case .authenticationFailed: Int32(srtp_err_status_auth_fail.rawValue)
        case .replayed(let tooOld): Int32((tooOld ? srtp_err_status_replay_old : srtp_err_status_replay_fail).rawValue)
        case .library(let code, _): code
        case .bufferTooSmall, .badKey, .invalidReplayWindow, .wrongDirection, .malformed: nil
        }
    }

    /// A stable name for counters of dropped packets.
    public var reason: String {
        switch self {
        case .authenticationFailed: "authentication-failed"
        case .replayed(let tooOld): tooOld ? "replay-too-old" : "replayed"
        case .bufferTooSmall: "buffer-too-small"
        case .badKey: "bad-key"
        case .invalidReplayWindow: "invalid-replay-window"
        case .wrongDirection: "wrong-direction"
        case .malformed: "malformed"
        case .library: "library-error"
        }
    }

    /// The named error for a libsrtp status other than `srtp_err_status_ok`.
    init(status: srtp_err_status_t, operation: String) {
        switch status {
        case srtp_err_status_auth_fail: self = .authenticationFailed
        case srtp_err_status_replay_fail: self = .replayed(tooOld: false)
        case srtp_err_status_replay_old: self = .replayed(tooOld: true)
        default: self = .library(code: Int32(status.rawValue), operation: operation)
        }
    }

    public var description: String {
        switch self {
        case .authenticationFailed: "SRTP authentication failed"
        case .replayed(let tooOld): tooOld ? "SRTP packet older than the replay window" : "SRTP packet replayed"
        case .bufferTooSmall(let needed, let available): "SRTP buffer too small: \(available) bytes, \(needed) needed"
        case .badKey(let reason): "SRTP key: \(reason)"
        case .invalidReplayWindow(let size): "SRTP replay window \(size) outside 64...32767"
        case .wrongDirection: "SRTP session used in the wrong direction"
        case .malformed(let reason): "SRTP: \(reason)"
        case .library(let code, let operation): "\(operation) failed with status \(code)"
        }
    }
}

/// Why key material was refused (RFC 4568 §6.1, RFC 3711 §8.2).
public enum SRTPKeyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The master key, the salt, or both together (`part`) have `actual` bytes where the profile needs `expected`.
    case wrongLength(part: Part, expected: Int, actual: Int)
    /// The SDES `inline:` text does not parse.
    case sdes(SDPCrypto.KeyParameterError)
    /// The `a=crypto` suite is not one of `SRTPProfile`'s.
    case unsupportedSuite(String)
    /// The MKI value needs more than its declared length in bytes (RFC 4568 §6.1).
    case mkiTooLarge(value: UInt64, length: Int)

    public enum Part: String, Sendable, Hashable {
        case key, salt, keyAndSalt = "key and salt"
    }

    public var description: String {
        switch self {
        case .wrongLength(let part, let expected, let actual): "\(part.rawValue) is \(actual) bytes, not \(expected)"
        case .sdes(let reason): "SDES \(reason)"
        case .unsupportedSuite(let name): "unsupported crypto suite \(name)"
        case .mkiTooLarge(let value, let length): "MKI \(value) does not fit in \(length) bytes"
        }
    }
}
