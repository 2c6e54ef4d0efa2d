import CSSL
import MediaCore

/// The datagrams between an association and its OpenSSL connection.
///
/// OpenSSL 3.0's memory BIO is a byte stream: datagrams written one after the other run together, and two
/// fed in read as one. This BIO keeps datagram boundaries instead, as a UDP socket would: each `BIO_write`
/// becomes one outgoing datagram (during the handshake OpenSSL packs a flight's records into writes of at
/// most the MTU through its buffering BIO), and each read returns one whole incoming datagram.
final class DatagramPipe {
    /// The datagram OpenSSL reads next; nil once read.
    var incoming: [UInt8]?
    /// Datagrams OpenSSL wrote, oldest first, not yet taken by `pollTransmit`.
    var outgoing = PollQueue<[UInt8]>()
    /// The first retransmission timeout, read by OpenSSL's timer callback (`DTLS_set_timer_cb`).
    var initialTimeoutMicroseconds: UInt32 = 1_000_000
    /// The remote fingerprint, if known, which the verify callback checks the peer's certificate against.
    var expectedFingerprint: DTLSFingerprint?
    /// The digest of a peer certificate the verify callback refused.
    var refusedFingerprint: DTLSFingerprint?

    /// True when the peer's certificate, `der`, matches `expectedFingerprint`, or none is known yet (the
    /// association checks it once known). Records a refused digest in `refusedFingerprint`.
    func acceptsPeerCertificate(der: [UInt8]) -> Bool {
        guard let expected = expectedFingerprint else { return true }
        let actual = DTLSFingerprint(algorithm: expected.algorithm, digestingDER: der)
            ?? DTLSFingerprint(algorithm: expected.algorithm, bytes: [])
        guard actual == expected else {
            refusedFingerprint = actual
            return false
        }
        return true
    }
}

/// A new BIO over `pipe`, which it does not retain: the owner keeps `pipe` alive as long as the BIO.
func makeDatagramBIO(_ pipe: DatagramPipe) -> OpaquePointer? {
    guard let method = datagramBIOMethod, let bio = BIO_new(method) else { return nil }
    BIO_set_data(bio, Unmanaged.passUnretained(pipe).toOpaque())
    BIO_set_init(bio, 1)
    return bio
}

/// The pipe under `bio`, one made by `makeDatagramBIO`.
func datagramPipe(of bio: OpaquePointer?) -> DatagramPipe? {
    guard let data = BIO_get_data(bio) else { return nil }
    return Unmanaged<DatagramPipe>.fromOpaque(data).takeUnretainedValue()
}

/// The method table, made once per process.
nonisolated(unsafe) private let datagramBIOMethod: OpaquePointer? = {
    guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "sluice-datagram") else { return nil }
    BIO_meth_set_write(method) { bio, data, length in
        sluice_bio_clear_retry_flags(bio)
        guard let pipe = datagramPipe(of: bio), let data, length >= 0 else { return -1 }
        pipe.outgoing.append(Array(UnsafeRawBufferPointer(start: data, count: Int(length))))
        return length
    }
    BIO_meth_set_read(method) { bio, buffer, capacity in
        sluice_bio_clear_retry_flags(bio)
        guard let pipe = datagramPipe(of: bio), let buffer, capacity > 0 else { return -1 }
        guard let datagram = pipe.incoming else {
            sluice_bio_set_retry_read(bio)
            return -1
        }
        pipe.incoming = nil
        // A datagram longer than the buffer is cut, as recvfrom cuts it (OpenSSL's buffer holds a full record).
        let count = min(datagram.count, Int(capacity))
        datagram.withUnsafeBytes { bytes in
            UnsafeMutableRawBufferPointer(start: buffer, count: count).copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[..<count]))
        }
        return Int32(count)
    }
    BIO_meth_set_ctrl(method) { bio, command, _, _ in
        switch command {
        case BIO_CTRL_FLUSH: 1
        case BIO_CTRL_PENDING: Int(datagramPipe(of: bio)?.incoming?.count ?? 0)
        // No path-MTU discovery: the association sets the MTU (SSL_OP_NO_QUERY_MTU), so MTU queries and
        // the socket controls of the datagram BIO answer 0.
        default: 0
        }
    }
    return method
}()
