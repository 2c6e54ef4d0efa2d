// DTLS records as a peer's datagrams reach `DTLSAssociation` (RFC 6347 over OpenSSL and a memory
// BIO): the input picks the role, then gives datagrams (a 2-byte length each) and clock steps; every
// datagram and timer goes through the association and everything it has to send or say is drained.
// OpenSSL itself is not instrumented: the target is Sluice's side (the pipe, the timer, the events,
// the fingerprint check, the SRTP keys).
import FuzzSupport
import Glibc
import MediaCore
import MediaDTLS

@_cdecl("FuzzDTLS_main")
func entry(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    // One key pair for every input: making one per input would leave little time for the records.
    let certificate = try! DTLSCertificate()
    if let folder = getenv("SLUICE_FUZZ_DTLS_SEEDS").map({ String(cString: $0) }) {
        writeSeeds(to: folder, certificate: certificate)
        return 0
    }
    return fuzzMain(argc, argv) { bytes in
        var input = FuzzReader(bytes)
        let role: DTLSRole = input.bool() ? .client : .server
        guard let association = try? DTLSAssociation(role: role, certificate: certificate,
                                                     remoteFingerprint: input.bool() ? certificate.fingerprint : nil) else { return }
        var now = ClockTime.seconds(1)
        association.start(at: now)
        for _ in 0..<32 where input.hasMore {
            let length = Int(input.uint16() % 1500)
            association.handleDatagram(Array(input.bytes(length)), at: now)
            now = now + .milliseconds(Int64(input.byte()) * 20)
            association.handleTimeout(at: now)
            while let datagram = association.pollTransmit() { _ = datagram.count }
            while let event = association.pollEvent() { _ = event }
        }
        association.close()
        while association.pollTransmit() != nil {}
    }
}

/// Seeds (`SLUICE_FUZZ_DTLS_SEEDS=DIR FuzzDTLS`): a whole handshake between two associations in
/// memory, written as the inputs of each side: what the server received (role byte 0) and what the
/// client received (role byte 1), each datagram with its length and no clock step.
func writeSeeds(to folder: String, certificate: DTLSCertificate) {
    let client = try! DTLSAssociation(role: .client, certificate: certificate, remoteFingerprint: certificate.fingerprint)
    let server = try! DTLSAssociation(role: .server, certificate: certificate, remoteFingerprint: certificate.fingerprint)
    var received: [DTLSRole: [UInt8]] = [.server: [0, 1], .client: [1, 1]]
    let now = ClockTime.seconds(1)
    server.start(at: now)
    client.start(at: now)
    for _ in 0..<10 {
        for (from, to, role) in [(client, server, DTLSRole.server), (server, client, DTLSRole.client)] {
            while let datagram = from.pollTransmit() {
                received[role]! += [UInt8(datagram.count >> 8), UInt8(datagram.count & 0xFF)] + datagram + [0]
                to.handleDatagram(datagram, at: now)
            }
        }
    }
    for (role, bytes) in received {
        let path = "\(folder)/handshake-\(role == .server ? "server" : "client")"
        guard let file = fopen(path, "wb") else { fatalError("cannot write \(path)") }
        _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
    }
}
