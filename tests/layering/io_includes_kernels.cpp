// Must NOT compile: io sits on tensor/base, below the kernels.
#include "qkv/kernels/gemm.h"
