// Must NOT compile: viz takes strings and float matrices (base only), never tensors.
#include "qkv/tensor/tensor.h"
