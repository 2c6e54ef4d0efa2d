#include "CFFmpegShims.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <libavutil/log.h>

static _Thread_local int recording;
static _Thread_local int recorded;
static _Thread_local char message[512];
// Read by the callback on whichever thread FFmpeg logs from, written by every install (each
// container reader or decoder set-up, on its own thread): atomic, or the two race (TSan saw it).
static atomic_int printed_level = AV_LOG_FATAL;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void callback(void *avcl, int level, const char *format, va_list arguments) {
    if (recording && !recorded && level <= AV_LOG_ERROR) {
        va_list copy;
        va_copy(copy, arguments);
        vsnprintf(message, sizeof message, format, copy);
        va_end(copy);
        size_t length = strlen(message);
        while (length > 0 && strchr("\n .", message[length - 1])) message[--length] = 0;
        recorded = 1;
    }
    if (level <= atomic_load_explicit(&printed_level, memory_order_relaxed)) {
        av_log_default_callback(avcl, level, format, arguments);
    }
}

static void install(void) {
    av_log_set_level(atomic_load_explicit(&printed_level, memory_order_relaxed));
    av_log_set_callback(callback);
}

void sluice_ffmpeg_log_install(int print_level) {
    atomic_store_explicit(&printed_level, print_level, memory_order_relaxed);
    pthread_once(&once, install);
}

void sluice_ffmpeg_log_begin(void) {
    recording = 1;
    recorded = 0;
    message[0] = 0;
}

const char *sluice_ffmpeg_log_end(void) {
    recording = 0;
    return recorded ? message : NULL;
}
