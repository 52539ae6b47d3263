// Must NOT compile: data depends on tensor/base only, never on autograd.
#include "qkv/autograd/variable.h"
