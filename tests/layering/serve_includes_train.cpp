// Must NOT compile: serving loads models through decode; it never links the trainer.
#include "qkv/train/checkpoint.h"
