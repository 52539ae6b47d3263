// Must NOT compile: models sit below training.
#include "qkv/train/optimizer.h"
