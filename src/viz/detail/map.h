// Private: helpers shared by the heatmap renderers.
#pragma once

#include <string>

#include "qkv/viz/heatmap.h"

namespace qkv::viz::detail {

// "attention map 'TITLE'" (or "attention map" without a title), for messages.
std::string map_name(const AttentionMap& map);

}  // namespace qkv::viz::detail
