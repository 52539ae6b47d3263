// Must NOT compile: tensor sits below kernels (see tests/CMakeLists.txt).
#include "qkv/kernels/gemm.h"
