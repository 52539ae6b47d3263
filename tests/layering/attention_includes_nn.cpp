// Must NOT compile: attention and nn sit side by side above autograd; attention takes
// its parameters as Variables and never sees the parameter store or the layers.
#include "qkv/nn/linear.h"
