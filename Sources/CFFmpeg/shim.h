// FFmpeg's libavformat, libavcodec and libavutil as one module, shared by every Sluice target that
// uses FFmpeg (containers, and the decoder plug-ins of CodecFFmpeg). The inline functions stand in for the macros
// Swift cannot import (error codes built by FFERRTAG/AVERROR, AV_NOPTS_VALUE).
#ifndef SLUICE_CFFMPEG_SHIM_H
#define SLUICE_CFFMPEG_SHIM_H

#include <errno.h>
#include <stdio.h>
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/mathematics.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>

static inline int sluice_averror_eof(void) { return AVERROR_EOF; }
static inline int sluice_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int sluice_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int64_t sluice_av_nopts_value(void) { return AV_NOPTS_VALUE; }

/// The text of an FFmpeg error code.
static inline void sluice_av_strerror(int code, char *buffer, size_t size) {
    if (av_strerror(code, buffer, size) < 0) snprintf(buffer, size, "error %d", code);
}

#endif
