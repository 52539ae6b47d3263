// Must NOT compile: autograd sits below attention (see tests/CMakeLists.txt).
#include "qkv/attention/attention.h"
