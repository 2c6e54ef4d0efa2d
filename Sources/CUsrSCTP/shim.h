// usrsctp (SCTP in user space) for Swift: MediaSCTP runs it without threads over AF_CONN addresses, so
// SCTP packets go in and out as bytes (RFC 8261's SCTP over DTLS). The API imports as is; the helpers
// below give Swift the sizes of the variable-length option structures.
#ifndef SLUICE_CUSRSCTP_SHIM_H
#define SLUICE_CUSRSCTP_SHIM_H

#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/socket.h>
#include <usrsctp.h>

/// Asks the peer to reset the outgoing direction of `count` streams (RFC 6525 §5.1.2): 0 on success,
/// else errno.
static inline int sluice_sctp_reset_outgoing(struct socket *so, const uint16_t *streams, uint16_t count) {
    size_t length = sizeof(struct sctp_reset_streams) + (size_t)count * sizeof(uint16_t);
    struct sctp_reset_streams *reset = (struct sctp_reset_streams *)calloc(1, length);
    if (reset == NULL) return ENOMEM;
    reset->srs_assoc_id = SCTP_ALL_ASSOC;
    reset->srs_flags = SCTP_STREAM_RESET_OUTGOING;
    reset->srs_number_streams = count;
    memcpy(reset->srs_stream_list, streams, (size_t)count * sizeof(uint16_t));
    int result = usrsctp_setsockopt(so, IPPROTO_SCTP, SCTP_RESET_STREAMS, reset, (socklen_t)length);
    int error = result == 0 ? 0 : errno;
    free(reset);
    return error;
}

/// The errno of the calling thread, for the usrsctp calls that set it.
static inline int sluice_sctp_errno(void) { return errno; }

#endif
