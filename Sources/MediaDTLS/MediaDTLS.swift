// DTLS 1.2 (RFC 6347) with the SRTP extension (RFC 5764) through OpenSSL over memory BIOs: takes
// datagrams and a time, gives datagrams, timers, and the SRTP keys when the handshake completes.
