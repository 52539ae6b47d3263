// Must NOT compile: kernels sit below ops (see tests/CMakeLists.txt).
#include "qkv/ops/matmul.h"
