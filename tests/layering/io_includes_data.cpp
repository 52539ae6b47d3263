// Must NOT compile: io and data are siblings over tensor/base; model files know nothing
// of corpora or vocabularies.
#include "qkv/data/vocab.h"
