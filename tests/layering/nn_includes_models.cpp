// Must NOT compile: nn (layers) sits below models.
#include "qkv/models/seq2seq.h"
