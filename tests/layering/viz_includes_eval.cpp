// Must NOT compile: viz and eval are siblings over base; drawing takes scores as
// numbers from its caller and never computes BLEU.
#include "qkv/eval/bleu.h"
