// Must NOT compile: the trainer computes the validation cross-entropy; BLEU is an observer
// its callers install (experiment/validators.h).
#include "qkv/eval/bleu.h"
