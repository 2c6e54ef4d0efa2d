// alsa-lib (libasound): PCM devices, their hardware and software parameters, device name hints.
// The parameter containers are allocated with the *_malloc functions (the *_alloca macros cannot be
// called from Swift). One shim: alsa-lib prints its errors to stderr by default; Sluice reports
// them itself (with snd_strerror), so it installs a handler that keeps them quiet. The handler is
// variadic, which Swift cannot define.
#include <alsa/asoundlib.h>

static void sluice_alsa_quiet_error(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

static inline void sluice_alsa_keep_errors_quiet(void) { snd_lib_error_set_handler(sluice_alsa_quiet_error); }
