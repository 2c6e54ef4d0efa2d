#include "CHeapStats.h"
