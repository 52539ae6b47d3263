// Must NOT compile: nn (layers) sits below models.
#include "qkv/models/config.h"
