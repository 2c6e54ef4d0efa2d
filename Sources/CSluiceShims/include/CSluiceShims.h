// Small static-inline shims for C API entry points that Swift cannot call
// directly: function-like macros and variadic functions.
#ifndef SLUICE_SHIMS_H
#define SLUICE_SHIMS_H

#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>
#include <malloc.h>
#include <stddef.h>

/// Bytes of heap in use (mallinfo2's uordblks: allocated and not yet freed), for allocation tests
/// and pipebench (malloc.h is not in Swift's Glibc module).
static inline size_t sluice_heap_bytes_in_use(void) { return mallinfo2().uordblks; }

/// Gives the free memory at the top of glibc's heaps back to the system (malloc_trim(0)).
static inline int sluice_heap_trim(void) { return malloc_trim(0); }

/// vpx_codec_enc_init is a macro that passes the ABI version.
static inline vpx_codec_err_t sluice_vpx_enc_init(vpx_codec_ctx_t *ctx, vpx_codec_iface_t *iface,
                                                 const vpx_codec_enc_cfg_t *cfg, vpx_codec_flags_t flags) {
    return vpx_codec_enc_init(ctx, iface, cfg, flags);
}

/// vpx_codec_dec_init is a macro that passes the ABI version.
static inline vpx_codec_err_t sluice_vpx_dec_init(vpx_codec_ctx_t *ctx, vpx_codec_iface_t *iface,
                                                 const vpx_codec_dec_cfg_t *cfg, vpx_codec_flags_t flags) {
    return vpx_codec_dec_init(ctx, iface, cfg, flags);
}

/// vpx_codec_control is variadic; every VP8 control Sluice sets takes an int.
static inline vpx_codec_err_t sluice_vpx_control_int(vpx_codec_ctx_t *ctx, int id, int value) {
    return vpx_codec_control_(ctx, id, value);
}

#endif
