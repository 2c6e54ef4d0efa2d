#include "CSluiceShims.h"
