// Must NOT compile: eval takes strings (base only), never tensors.
#include "qkv/tensor/tensor.h"
