// Must NOT compile: ops sit below autograd (see tests/CMakeLists.txt).
#include "qkv/autograd/variable.h"
