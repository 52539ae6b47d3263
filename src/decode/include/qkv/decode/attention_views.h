// Which attention distributions a reader asks to see, by name: `qkv attend --layer --head`
// and any front end that shows heatmaps. A layer is "last", "all" or a 0-based decoder
// layer; a head is "avg" (the mean over heads), "all" or a 0-based head. An rnn has one
// attention: layer 0 / last, head 0 / avg.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "qkv/models/config.h"
#include "qkv/models/seq2seq.h"

namespace qkv::decode {

struct AttentionView {
  models::AttentionSelection which;  // what Translator::attention takes
  std::string title;                 // "layer 1, head avg" ("" for an rnn's one attention)
  std::string suffix;                // ".layer-1.head-avg" ("" when one view is asked for)
};

// Whether `spec` is `named` ("last" for layers, "avg" for heads), "all" or an index of at
// most five digits: the form, before a model says which indices exist.
bool is_view_spec(std::string_view spec, std::string_view named);

// The views `layer` x `head` of a model with `config`, layers outermost. FieldError naming
// {layer} or {head} for a spec of the wrong form or an index the model does not have.
// `config` must attend (an rnn without attention has nothing to show: the caller says so
// in its own terms).
std::vector<AttentionView> attention_views(std::string_view layer, std::string_view head,
                                           const models::ModelConfig& config);

}  // namespace qkv::decode
