// STUN (RFC 8489) and the TURN (RFC 8656) and ICE (RFC 8445) attributes: messages as values, parsed and
// serialized, with MESSAGE-INTEGRITY(-SHA256) and FINGERPRINT. Pure: no sockets, no clock.
