// The WebRTC peer: one bundled transport (ICE, DTLS-SRTP, RFC 7983 demultiplexing) under a peer
// connection with JSEP offer/answer (RFC 8829).
