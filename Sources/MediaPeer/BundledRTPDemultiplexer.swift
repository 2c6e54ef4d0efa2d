import MediaCore
/// What one RTP session on a bundle takes: the keys the demultiplexer routes its packets by
/// (RFC 8843 §9.2, RFC 9143 §9.2, simplified to one transport without MID header extensions).
///
/// - RTP goes by SSRC when a route names it in `remoteSSRCs` (a receive session's media SSRC and its
///   RTX SSRC, RFC 4588), else by payload type (`payloadTypes`); a route reached by payload type
///   learns the SSRC (a few at most) so that RTCP naming it finds the route too.
/// - RTCP goes to every route whose SSRCs (`remoteSSRCs`, learned ones, `localSSRCs`) the compound
///   names: a sender report's source, report blocks' sources, feedback's media source (RFC 4585
///   §6.1), FIR's targets (RFC 5104 §4.3.1), BYE's sources; a compound naming no route's SSRC goes
///   to every route. Sessions ignore RTCP about other streams, so this is safe as well as cheap.
public struct BundledRoute: Sendable, Hashable {
    /// SSRCs of the remote streams this session receives (media and RTX).
    public var remoteSSRCs: [UInt32]
    /// SSRCs this session sends with (media and RTX): feedback about them comes here.
    public var localSSRCs: [UInt32]
    /// Payload types that reach this session when no route knows the packet's SSRC.
    public var payloadTypes: [UInt8]

    public init(remoteSSRCs: [UInt32] = [], localSSRCs: [UInt32] = [], payloadTypes: [UInt8] = []) {
        self.remoteSSRCs = remoteSSRCs
        self.localSSRCs = localSSRCs
        self.payloadTypes = payloadTypes
    }

    /// A receive session: by `ssrc` (and `rtxSSRC`) when signalled, else by `payloadTypes`.
    public static func receiving(ssrc: UInt32? = nil, rtxSSRC: UInt32? = nil, payloadTypes: [UInt8] = []) -> BundledRoute {
        BundledRoute(remoteSSRCs: [ssrc, rtxSSRC].compactMap { $0 }, payloadTypes: payloadTypes)
    }

    /// A send session: only RTCP about `ssrc` (or `rtxSSRC`) comes back to it.
    public static func sending(ssrc: UInt32, rtxSSRC: UInt32? = nil) -> BundledRoute {
        BundledRoute(localSSRCs: [ssrc, rtxSSRC].compactMap { $0 })
    }
}

/// What the demultiplexer did with the packets the loop handed it.
public struct BundledDemultiplexerStatistics: Sendable, Hashable {
    public var rtpRoutedBySSRC = 0
    public var rtpRoutedByPayloadType = 0
    /// RTP no route takes (unknown SSRC and payload type): dropped.
    public var rtpUnrouted = 0
    /// RTCP compounds delivered to the routes they name, and to every route (they named none).
    public var rtcpRoutedBySSRC = 0
    public var rtcpBroadcast = 0
    /// Packets too short for their header (12 bytes of RTP, 8 of RTCP): dropped.
    public var malformed = 0

    public init() {}
}

/// Routes the unprotected RTP and RTCP a `PeerTransportLoop` receives on its one 5-tuple to the
/// sessions' `BundledRTPTransport`s, by the rules of `BundledRoute`. Build it first, give the loop
/// its `handlers(onEvent:)`, then attach one transport per session. Routing runs where the loop's
/// handlers do (the reactor thread) and allocates nothing: the routes' tables are fixed when
/// attached (learned SSRCs fill capacity reserved then), and each packet is copied once, into its
/// session's ring.
public final class BundledRTPDemultiplexer: Sendable {
    /// How many SSRCs a route reached by payload type learns; past that it is still reached by type.
    static let learnedSSRCLimit = 4

    /// One attached transport's ring and keys. Mutated only under the table's lock.
    final class Entry: @unchecked Sendable {
        let ring: BundledPacketRing
        var remoteSSRCs: [UInt32]
        let remoteLimit: Int
        let localSSRCs: [UInt32]
        let payloadTypes: [UInt8]

        init(ring: BundledPacketRing, route: BundledRoute) {
            self.ring = ring
            remoteLimit = route.remoteSSRCs.count + BundledRTPDemultiplexer.learnedSSRCLimit
            remoteSSRCs = route.remoteSSRCs
            remoteSSRCs.reserveCapacity(remoteLimit)
            localSSRCs = route.localSSRCs
            payloadTypes = route.payloadTypes
        }

        func names(_ ssrc: UInt32) -> Bool { remoteSSRCs.contains(ssrc) || localSSRCs.contains(ssrc) }
    }

    private struct Table: @unchecked Sendable {
        var entries: [Entry] = []
        var statistics = BundledDemultiplexerStatistics()
    }

    private let table = Locked(Table())

    public init() {}

    /// Handlers for the loop: its RTP and RTCP come here; `onEvent` is the caller's.
    public func handlers(onEvent: @escaping @Sendable (PeerTransport.Event) -> Void = { _ in }) -> PeerTransportLoop.Handlers {
        PeerTransportLoop.Handlers(onEvent: onEvent,
                                   onRTP: { [self] packet in routeRTP(packet) },
                                   onRTCP: { [self] packet in routeRTCP(packet) })
    }

    public var statistics: BundledDemultiplexerStatistics { table.withLock { $0.statistics } }

    func attach(_ ring: BundledPacketRing, route: BundledRoute) {
        let entry = Entry(ring: ring, route: route)
        table.withLock { $0.entries.append(entry) }
    }

    func detach(_ ring: BundledPacketRing) {
        table.withLock { $0.entries.removeAll { $0.ring === ring } }
    }

    /// Routes one unprotected RTP packet (RFC 3550 §5.1: payload type in byte 1, SSRC at 8...11).
    public func routeRTP(_ packet: UnsafeRawBufferPointer) {
        table.withLock { table in
            guard packet.count >= 12 else {
                table.statistics.malformed += 1
                return
            }
            let ssrc = Self.word(packet, at: 8)
            let payloadType = packet[1] & 0x7F
            if let entry = table.entries.first(where: { $0.remoteSSRCs.contains(ssrc) }) {
                table.statistics.rtpRoutedBySSRC += 1
                entry.ring.push(packet, rtcp: false)
            } else if let entry = table.entries.first(where: { $0.payloadTypes.contains(payloadType) }) {
                table.statistics.rtpRoutedByPayloadType += 1
                if entry.remoteSSRCs.count < entry.remoteLimit { entry.remoteSSRCs.append(ssrc) }
                entry.ring.push(packet, rtcp: false)
            } else {
                table.statistics.rtpUnrouted += 1
            }
        }
    }

    /// Routes one unprotected RTCP compound packet to the routes it names, or to all.
    public func routeRTCP(_ packet: UnsafeRawBufferPointer) {
        table.withLock { table in
            guard packet.count >= 8 else {
                table.statistics.malformed += 1
                return
            }
            var delivered = false
            for entry in table.entries where Self.compound(packet, names: { entry.names($0) }) {
                entry.ring.push(packet, rtcp: true)
                delivered = true
            }
            if delivered {
                table.statistics.rtcpRoutedBySSRC += 1
            } else {
                table.statistics.rtcpBroadcast += 1
                for entry in table.entries { entry.ring.push(packet, rtcp: true) }
            }
        }
    }

    /// Whether a packet of the compound names an SSRC for which `matches` holds; reads the SSRC
    /// fields in place, bounds-checked, and stops at the first packet whose length runs past the end.
    static func compound(_ bytes: UnsafeRawBufferPointer, names matches: (UInt32) -> Bool) -> Bool {
        var offset = 0
        while offset + 8 <= bytes.count {
            let count = Int(bytes[offset] & 0x1F)
            let type = bytes[offset + 1]
            let size = ((Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])) + 1) * 4
            let end = min(bytes.count, offset + size)
            func named(_ at: Int) -> Bool { at + 4 <= end && matches(word(bytes, at: at)) }
            switch type {
            case 200:  // SR (RFC 3550 §6.4.1): sender, then report blocks of 24 bytes after 20 of sender info
                if named(offset + 4) || (0..<count).contains(where: { named(offset + 28 + 24 * $0) }) { return true }
            case 201:  // RR (§6.4.2): sender, then report blocks
                if named(offset + 4) || (0..<count).contains(where: { named(offset + 8 + 24 * $0) }) { return true }
            case 203:  // BYE (§6.6): the sources leaving
                if (0..<count).contains(where: { named(offset + 4 + 4 * $0) }) { return true }
            case 205, 206:  // RTPFB, PSFB (RFC 4585 §6.1): sender, media source; FIR's FCI names its targets
                if named(offset + 4) || named(offset + 8) { return true }
                if type == 206, count == 4, stride(from: offset + 12, to: end, by: 8).contains(where: named) { return true }
            default:  // SDES and the rest: the first SSRC
                if named(offset + 4) { return true }
            }
            offset += size
        }
        return false
    }

    static func word(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }
}
