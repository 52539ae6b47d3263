// Must NOT compile: eval and viz are siblings over base; scoring never draws.
#include "qkv/viz/chart.h"
