// Static-inline shims for libopus requests Swift cannot call directly: opus_encoder_ctl and
// opus_decoder_ctl are variadic, and their request macros check argument types. One function per
// request keeps that type checking.
#ifndef SLUICE_COPUS_SHIM_H
#define SLUICE_COPUS_SHIM_H

#include <opus.h>

// MARK: Encoder

static inline int sluice_opus_set_application(OpusEncoder *st, opus_int32 value) {
    return opus_encoder_ctl(st, OPUS_SET_APPLICATION(value));
}
static inline int sluice_opus_get_application(OpusEncoder *st, opus_int32 *value) {
    return opus_encoder_ctl(st, OPUS_GET_APPLICATION(value));
}
static inline int sluice_opus_set_bitrate(OpusEncoder *st, opus_int32 value) {
    return opus_encoder_ctl(st, OPUS_SET_BITRATE(value));
}
static inline int sluice_opus_get_bitrate(OpusEncoder *st, opus_int32 *value) {
    return opus_encoder_ctl(st, OPUS_GET_BITRATE(value));
}
static inline int sluice_opus_set_complexity(OpusEncoder *st, opus_int32 value) {
    return opus_encoder_ctl(st, OPUS_SET_COMPLEXITY(value));
}
static inline int sluice_opus_get_complexity(OpusEncoder *st, opus_int32 *value) {
    return opus_encoder_ctl(st, OPUS_GET_COMPLEXITY(value));
}
static inline int sluice_opus_set_inband_fec(OpusEncoder *st, opus_int32 value) {
    return opus_encoder_ctl(st, OPUS_SET_INBAND_FEC(value));
}
static inline int sluice_opus_get_inband_fec(OpusEncoder *st, opus_int32 *value) {
    return opus_encoder_ctl(st, OPUS_GET_INBAND_FEC(value));
}
static inline int sluice_opus_set_packet_loss_perc(OpusEncoder *st, opus_int32 value) {
    return opus_encoder_ctl(st, OPUS_SET_PACKET_LOSS_PERC(value));
}
static inline int sluice_opus_get_packet_loss_perc(OpusEncoder *st, opus_int32 *value) {
    return opus_encoder_ctl(st, OPUS_GET_PACKET_LOSS_PERC(value));
}
static inline int sluice_opus_set_dtx(OpusEncoder *st, opus_int32 value) {
    return opus_encoder_ctl(st, OPUS_SET_DTX(value));
}
static inline int sluice_opus_get_dtx(OpusEncoder *st, opus_int32 *value) {
    return opus_encoder_ctl(st, OPUS_GET_DTX(value));
}
static inline int sluice_opus_set_signal(OpusEncoder *st, opus_int32 value) {
    return opus_encoder_ctl(st, OPUS_SET_SIGNAL(value));
}
static inline int sluice_opus_set_vbr(OpusEncoder *st, opus_int32 value) {
    return opus_encoder_ctl(st, OPUS_SET_VBR(value));
}
static inline int sluice_opus_set_expert_frame_duration(OpusEncoder *st, opus_int32 value) {
    return opus_encoder_ctl(st, OPUS_SET_EXPERT_FRAME_DURATION(value));
}
/// Samples (at the encoder's rate) of delay the encoder adds: the Ogg Opus pre-skip.
static inline int sluice_opus_get_lookahead(OpusEncoder *st, opus_int32 *value) {
    return opus_encoder_ctl(st, OPUS_GET_LOOKAHEAD(value));
}
static inline int sluice_opus_encoder_reset(OpusEncoder *st) {
    return opus_encoder_ctl(st, OPUS_RESET_STATE);
}
static inline int sluice_opus_get_in_dtx(OpusEncoder *st, opus_int32 *value) {
    return opus_encoder_ctl(st, OPUS_GET_IN_DTX(value));
}

// MARK: Decoder

static inline int sluice_opus_decoder_reset(OpusDecoder *st) {
    return opus_decoder_ctl(st, OPUS_RESET_STATE);
}
static inline int sluice_opus_decoder_get_last_packet_duration(OpusDecoder *st, opus_int32 *value) {
    return opus_decoder_ctl(st, OPUS_GET_LAST_PACKET_DURATION(value));
}
/// Output gain in Q8 dB, as in the OpusHead header (RFC 7845 §5.1).
static inline int sluice_opus_decoder_set_gain(OpusDecoder *st, opus_int32 value) {
    return opus_decoder_ctl(st, OPUS_SET_GAIN(value));
}

#endif
