// Swift-callable forms of x264's macros, and a log callback that keeps x264's last error message
// (x264 reports the reason for a failure only through its log).
#ifndef SLUICE_CX264_SHIM_H
#define SLUICE_CX264_SHIM_H

#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <x264.h>

/// `x264_encoder_open` is a macro naming the versioned symbol `x264_encoder_open_<X264_BUILD>`.
static inline x264_t *sluice_x264_encoder_open(x264_param_t *param) {
    return x264_encoder_open(param);
}

/// Where x264's log callback leaves the last error. x264 may log from its worker threads, hence the lock.
typedef struct sluice_x264_log {
    pthread_mutex_t lock;
    char last_error[512];
} sluice_x264_log;

static inline void sluice_x264_log_init(sluice_x264_log *log) {
    pthread_mutex_init(&log->lock, NULL);
    log->last_error[0] = 0;
}

static inline void sluice_x264_log_destroy(sluice_x264_log *log) {
    pthread_mutex_destroy(&log->lock);
}

static inline void sluice_x264_log_callback(void *private_data, int level, const char *format, va_list args) {
    if (level > X264_LOG_ERROR || private_data == NULL) return;
    sluice_x264_log *log = (sluice_x264_log *)private_data;
    pthread_mutex_lock(&log->lock);
    vsnprintf(log->last_error, sizeof log->last_error, format, args);
    pthread_mutex_unlock(&log->lock);
}

/// Routes `param`'s log to `log`, errors only: x264 prints nothing on its own.
static inline void sluice_x264_param_set_log(x264_param_t *param, sluice_x264_log *log) {
    param->pf_log = sluice_x264_log_callback;
    param->p_log_private = log;
    param->i_log_level = X264_LOG_ERROR;
}

/// Copies the last error (empty if none) into `out` and clears it.
static inline void sluice_x264_log_take(sluice_x264_log *log, char *out, size_t capacity) {
    if (capacity == 0) return;
    pthread_mutex_lock(&log->lock);
    strncpy(out, log->last_error, capacity - 1);
    out[capacity - 1] = 0;
    log->last_error[0] = 0;
    pthread_mutex_unlock(&log->lock);
}

#endif
