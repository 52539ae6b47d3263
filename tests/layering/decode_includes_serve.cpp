// Must NOT compile: the server is a client of decoding, never the other way round.
#include "qkv/serve/service.h"
