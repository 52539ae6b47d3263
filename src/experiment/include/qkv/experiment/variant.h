// The systems a comparison trains, as `qkv compare --variants` names them:
//   rnn:none        the encoder-decoder without attention (the bottleneck baseline)
//   rnn:dot, rnn:scaled-dot, rnn:cosine, rnn:general   Luong attention
//   rnn:additive    Bahdanau attention
//   transformer     the pre-LN Transformer (scaled-dot attention)
//   transformer:h8  the same with 8 attention heads (any count >= 1 that divides the
//                   model size), overriding --heads for this variant only
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "qkv/models/config.h"

namespace qkv::experiment {

struct Variant {
  std::string name;  // as written in the list: "rnn:additive", "transformer"
  models::ModelType type = models::ModelType::Rnn;
  models::AttentionKind attention = models::AttentionKind::None;
  int64_t heads = 0;  // transformer:h<N>: N; 0: the comparison's --heads

  // "rnn-additive", "transformer-h8": the name with ':' replaced, for directory and file
  // names.
  std::string file_name() const;
  // False only for rnn:none: it has no attention to show.
  bool attends() const noexcept;

  friend bool operator==(const Variant&, const Variant&) = default;
};

// "rnn:none,rnn:dot,rnn:additive,transformer" -> the variants in that order. ConfigError
// starting with `flag` for an empty list or entry, an unknown type or attention (listing
// the choices), an rnn without ":<attention>", a transformer suffix other than h<N>
// (N >= 1), and a variant named twice.
std::vector<Variant> parse_variants(std::string_view list, std::string_view flag = "--variants");

}  // namespace qkv::experiment
