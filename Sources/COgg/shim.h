// libogg: page framing, CRCs and packet assembly (RFC 3533). Its API has no macros or variadic
// functions, so Swift calls it directly.
#include <ogg/ogg.h>
