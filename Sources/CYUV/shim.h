// libyuv has no pkg-config file on Debian; its headers are plain C when included from C.
#include <libyuv/scale.h>
#include <libyuv/convert.h>
#include <libyuv/convert_from.h>
#include <libyuv/planar_functions.h>
