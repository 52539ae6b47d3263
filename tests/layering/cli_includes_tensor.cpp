// Must NOT compile: cli parses options (base only).
#include "qkv/tensor/tensor.h"
