// Must NOT compile: data and io are siblings over tensor/base; corpora and vocabularies
// never read or write model files.
#include "qkv/io/safetensors.h"
