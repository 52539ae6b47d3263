// Must NOT compile: training sits below the experiments that run it.
#include "qkv/experiment/runner.h"
