// What a model of a given config holds, computed from the config alone, so that callers
// can refuse a config before building it: `qkv train` before it allocates a model that
// cannot fit in memory, the checkpoint loader before it builds the model a file's
// metadata describes (a hostile file must not make qkv allocate more than the file
// allows).
#pragma once

#include <cstdint>

#include "qkv/models/config.h"

namespace qkv::models {

// The most positions a Transformer's sinusoidal table may cover (validate() rejects more):
// the table holds max_positions × dim_emb values, built when the model is. `qkv train`
// sets max_positions to --max-length + 2 (at most 100002) or 1024.
inline constexpr int64_t kMaxPositionsLimit = int64_t{1} << 17;

struct ModelFootprint {
  // Elements of the parameter arena, each tied parameter once: exactly
  // make_model(config)->parameters().numel() (in double, exact below 2^53, so an absurd
  // config cannot overflow it).
  double parameters = 0;
  // Transformer: the position table's max_positions × dim_emb elements (0 for an rnn).
  double position_table = 0;
};

// The footprint of a valid config (ConfigError naming the key otherwise); allocates
// nothing.
ModelFootprint footprint(const ModelConfig& config);

}  // namespace qkv::models
