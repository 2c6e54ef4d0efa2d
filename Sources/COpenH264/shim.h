// OpenH264's C API exposes the encoder and decoder as pointers to vtables of function pointers
// (ISVCEncoder* is a `const ISVCEncoderVtbl**`): every method takes the object as its first
// argument and is reached through `(*object)->Method`. These static inline shims make those
// calls read like plain C functions from Swift.
#ifndef SLUICE_OPENH264_SHIM_H
#define SLUICE_OPENH264_SHIM_H

#include <wels/codec_api.h>

// MARK: - Decoder (ISVCDecoder)

static inline long sluice_openh264_decoder_initialize(ISVCDecoder *decoder, const SDecodingParam *param) {
    return (*decoder)->Initialize(decoder, param);
}

static inline long sluice_openh264_decoder_uninitialize(ISVCDecoder *decoder) {
    return (*decoder)->Uninitialize(decoder);
}

/// DecodeFrameNoDelay: decodes one whole access unit and returns its picture at once when the
/// stream needs no reordering.
static inline DECODING_STATE sluice_openh264_decode(ISVCDecoder *decoder, const unsigned char *source, int length,
                                                    unsigned char **planes, SBufferInfo *info) {
    return (*decoder)->DecodeFrameNoDelay(decoder, source, length, planes, info);
}

/// FlushFrame: hands out one picture still held for reordering.
static inline DECODING_STATE sluice_openh264_flush_frame(ISVCDecoder *decoder, unsigned char **planes,
                                                         SBufferInfo *info) {
    return (*decoder)->FlushFrame(decoder, planes, info);
}

static inline long sluice_openh264_decoder_set_option(ISVCDecoder *decoder, DECODER_OPTION option, void *value) {
    return (*decoder)->SetOption(decoder, option, value);
}

static inline long sluice_openh264_decoder_get_option(ISVCDecoder *decoder, DECODER_OPTION option, void *value) {
    return (*decoder)->GetOption(decoder, option, value);
}

// MARK: - Encoder (ISVCEncoder)

static inline int sluice_openh264_encoder_get_default_params(ISVCEncoder *encoder, SEncParamExt *param) {
    return (*encoder)->GetDefaultParams(encoder, param);
}

static inline int sluice_openh264_encoder_initialize_ext(ISVCEncoder *encoder, const SEncParamExt *param) {
    return (*encoder)->InitializeExt(encoder, param);
}

static inline int sluice_openh264_encoder_uninitialize(ISVCEncoder *encoder) {
    return (*encoder)->Uninitialize(encoder);
}

static inline int sluice_openh264_encode(ISVCEncoder *encoder, const SSourcePicture *picture, SFrameBSInfo *info) {
    return (*encoder)->EncodeFrame(encoder, picture, info);
}

static inline int sluice_openh264_force_intra_frame(ISVCEncoder *encoder, bool idr) {
    return (*encoder)->ForceIntraFrame(encoder, idr);
}

static inline int sluice_openh264_encoder_set_option(ISVCEncoder *encoder, ENCODER_OPTION option, void *value) {
    return (*encoder)->SetOption(encoder, option, value);
}

static inline int sluice_openh264_encoder_get_option(ISVCEncoder *encoder, ENCODER_OPTION option, void *value) {
    return (*encoder)->GetOption(encoder, option, value);
}

#endif
