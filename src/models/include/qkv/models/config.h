// The configuration of a model: which of the three systems the project compares
// (an RNN encoder-decoder without attention, with Luong or Bahdanau attention, or a
// Transformer) and its sizes. It travels as JSON in the safetensors metadata of every
// saved model, so parsing is strict: a missing, unknown or mistyped key is a
// ConfigError that names it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qkv::models {

enum class ModelType { Rnn, Transformer };

// The RNN decoder's attention. None: the decoder sees the source only through its
// initial state. Dot, ScaledDot, Cosine, General: Luong et al. 2015 (global attention,
// sec. 3.1). Additive: Bahdanau et al. 2015. The Transformer always uses ScaledDot.
enum class AttentionKind { None, Dot, ScaledDot, Cosine, General, Additive };

enum class CellType { Gru, Lstm };

struct ModelConfig {
  ModelType type = ModelType::Transformer;
  AttentionKind attention = AttentionKind::ScaledDot;
  CellType cell = CellType::Lstm;  // rnn only
  // One joint (SentencePiece) vocabulary: source and target share it.
  int64_t vocab_size = 8000;
  int64_t dim_emb = 512;   // embedding size E (the Transformer's model size)
  int64_t dim_rnn = 512;   // rnn only: hidden size H per direction
  int64_t enc_depth = 6;   // encoder layers
  int64_t dec_depth = 6;   // decoder layers
  int64_t heads = 8;       // transformer only: attention heads (divides dim_emb)
  int64_t dim_ffn = 2048;  // transformer only: feed-forward hidden size
  double dropout = 0.1;    // in [0, 1)
  // Source embeddings, target embeddings and the output projection share one table.
  bool tied_embeddings = true;
  // Luong et al. 2015, sec. 3.3: h̃_{t-1} joins the next decoder input. Only for an rnn
  // with dot, scaled-dot, cosine or general attention.
  bool input_feeding = false;
  int64_t pad_id = 0;
  int64_t bos_id = 2;
  int64_t eos_id = 3;
  // The longest sequence (source or target) the Transformer's position table covers.
  int64_t max_positions = 1024;

  friend bool operator==(const ModelConfig&, const ModelConfig&) = default;
};

// ConfigError naming the key when a value is out of range: non-positive sizes, dropout
// outside [0, 1), heads not dividing dim_emb, ids outside [0, vocab_size) or pad equal
// to bos/eos, input_feeding without Luong attention, a Transformer with another
// attention than scaled-dot.
void validate(const ModelConfig& config);

// Whether the model attends over the source: every Transformer, and an rnn unless its
// attention is none. Heatmaps, alignments, attention entropy and the coverage penalty
// need it.
bool attends(const ModelConfig& config) noexcept;

// The most tokens a source or a target may have, without the EOS or BOS the model adds:
// a Transformer's position table holds max_positions, one of them taken by the EOS
// (source) or the BOS (target); an rnn reads any length (INT64_MAX).
int64_t max_sequence_tokens(const ModelConfig& config) noexcept;

// {"type": "rnn", "attention": "general", ...}: every key, always. indent < 0: one line.
std::string to_json(const ModelConfig& config, int indent = -1);
// Parses and validates to_json's format. ConfigError for malformed JSON, a value of the
// wrong type (sizes must be integers, "8" or 8.5 are rejected), an unknown enum string,
// a missing key or an extra one; the message names the key.
ModelConfig from_json(std::string_view json);

// "rnn" | "transformer"; "none" | "dot" | "scaled-dot" | "cosine" | "general" |
// "additive"; "gru" | "lstm". The parsers throw ConfigError listing the choices.
std::string_view to_string(ModelType type) noexcept;
std::string_view to_string(AttentionKind kind) noexcept;
std::string_view to_string(CellType cell) noexcept;
ModelType parse_model_type(std::string_view s);
AttentionKind parse_attention_kind(std::string_view s);
CellType parse_cell_type(std::string_view s);

}  // namespace qkv::models
