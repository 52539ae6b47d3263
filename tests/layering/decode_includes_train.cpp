// Must NOT compile: decoding needs a model, never the training loop.
#include "qkv/train/checkpoint.h"
