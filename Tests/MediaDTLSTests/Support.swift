import MediaCore
import MediaDTLS
import MediaSRTP

/// A client and a server with fresh certificates, each knowing the other's fingerprint unless told not to.
struct AssociationPair {
    let client: DTLSAssociation
    let server: DTLSAssociation
    let clientCertificate: DTLSCertificate
    let serverCertificate: DTLSCertificate
    /// Every datagram either side sent, in order, as `pump` carried it.
    var carried: [(from: DTLSRole, bytes: [UInt8])] = []

    init(clientProfiles: [SRTPProfile] = DTLSAssociation.defaultSRTPProfiles,
         serverProfiles: [SRTPProfile] = DTLSAssociation.defaultSRTPProfiles,
         clientKnowsFingerprint: Bool = true, serverKnowsFingerprint: Bool = true, mtu: Int = 1200,
         initialRetransmissionTimeout: ClockTime = .seconds(1)) throws {
        clientCertificate = try DTLSCertificate()
        serverCertificate = try DTLSCertificate()
        client = try DTLSAssociation(
            role: .client, certificate: clientCertificate,
            remoteFingerprint: clientKnowsFingerprint ? serverCertificate.fingerprint : nil,
            srtpProfiles: clientProfiles, mtu: mtu, initialRetransmissionTimeout: initialRetransmissionTimeout)
        server = try DTLSAssociation(
            role: .server, certificate: serverCertificate,
            remoteFingerprint: serverKnowsFingerprint ? clientCertificate.fingerprint : nil,
            srtpProfiles: serverProfiles, mtu: mtu, initialRetransmissionTimeout: initialRetransmissionTimeout)
    }

    /// Starts both sides at `now` and carries datagrams until neither has any left.
    mutating func handshake(at now: ClockTime = .zero) {
        server.start(at: now)
        client.start(at: now)
        pump(at: now)
    }

    /// Carries datagrams both ways until neither side has any left; `deliver` may drop some.
    mutating func pump(at now: ClockTime, deliver: (DTLSRole, [UInt8]) -> Bool = { _, _ in true }) {
        for _ in 0..<100 {
            var moved = false
            while let datagram = client.pollTransmit() {
                moved = true
                carried.append((.client, datagram))
                if deliver(.client, datagram) { server.handleDatagram(datagram, at: now) }
            }
            while let datagram = server.pollTransmit() {
                moved = true
                carried.append((.server, datagram))
                if deliver(.server, datagram) { client.handleDatagram(datagram, at: now) }
            }
            if !moved { return }
        }
    }
}

extension DTLSAssociation {
    /// Every event waiting, oldest first.
    func events() -> [DTLSEvent] {
        var events: [DTLSEvent] = []
        while let event = pollEvent() { events.append(event) }
        return events
    }

    /// The keys of the only event waiting if it is `.connected`.
    func connectedKeys() -> DTLSSRTPKeys? {
        let events = events()
        guard events.count == 1, case .connected(let keys) = events[0] else { return nil }
        return keys
    }

    /// The error of the only event waiting if it is `.failed`.
    func failure() -> DTLSError? {
        let events = events()
        guard events.count == 1, case .failed(let error) = events[0] else { return nil }
        return error
    }
}

/// An RTP packet (RFC 3550 §5.1) with a 160-byte payload.
func rtpPacket(sequenceNumber: UInt16, ssrc: UInt32 = 0x1234_5678) -> [UInt8] {
    var packet: [UInt8] = [
        0x80, 111,                                                     // V=2 P=0 X=0 CC=0, M=0 PT=111
        UInt8(sequenceNumber >> 8), UInt8(truncatingIfNeeded: sequenceNumber),
        0x00, 0x00, 0x03, 0xc0,                                        // timestamp 960
        UInt8(ssrc >> 24), UInt8(truncatingIfNeeded: ssrc >> 16), UInt8(truncatingIfNeeded: ssrc >> 8), UInt8(truncatingIfNeeded: ssrc),
    ]
    packet += (0..<160).map { UInt8(truncatingIfNeeded: $0 * 7) }
    return packet
}

extension SRTPSession {
    /// `packet` protected (sender) or unprotected (receiver), in a buffer with room for the tag.
    func apply(to packet: [UInt8]) throws -> [UInt8] {
        var buffer = packet + [UInt8](repeating: 0, count: rtpOverhead)
        let length = try buffer.withUnsafeMutableBytes { bytes in
            direction == .sender ? try protect(bytes, length: packet.count) : try unprotect(bytes, length: packet.count)
        }
        return Array(buffer[..<length])
    }
}
