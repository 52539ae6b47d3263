// Must NOT compile: nn and attention sit side by side above autograd; the layers never
// see attention (models joins the two).
#include "qkv/attention/multi_head.h"
