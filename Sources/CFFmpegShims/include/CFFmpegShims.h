// What Swift cannot do with FFmpeg itself: a log callback (C variadic arguments). The callback keeps,
// per thread and while asked to, the first error message libavformat/libavcodec log, so that damage a
// demuxer steps over without failing (a Matroska resync) becomes an error Sluice reports.
#ifndef SLUICE_CFFMPEG_SHIMS_H
#define SLUICE_CFFMPEG_SHIMS_H

/// Installs the callback (once per process); messages at or below `print_level` are still printed by
/// FFmpeg's default callback.
void sluice_ffmpeg_log_install(int print_level);
/// Starts recording on this thread, forgetting what was recorded.
void sluice_ffmpeg_log_begin(void);
/// Stops recording on this thread; the first error message logged since `begin`, or NULL.
const char *sluice_ffmpeg_log_end(void);

#endif
