// Must NOT compile: base sits below tensor (see tests/CMakeLists.txt).
#include "qkv/tensor/tensor.h"
