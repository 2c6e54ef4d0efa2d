// libjpeg-turbo's TurboJPEG API: plain C, no macros or variadic calls that Swift cannot reach.
#ifndef SLUICE_CTURBOJPEG_SHIM_H
#define SLUICE_CTURBOJPEG_SHIM_H

#include <turbojpeg.h>

#endif
