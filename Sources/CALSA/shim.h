// alsa-lib (libasound): PCM devices, their hardware and software parameters, device name hints.
// The parameter containers are allocated with the *_malloc functions (the *_alloca macros cannot be
// called from Swift), so no shim functions are needed.
#include <alsa/asoundlib.h>
