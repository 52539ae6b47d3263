// ModelConfig <-> JSON, strictly: the JSON is read back from saved models, so anything
// unexpected is an error that names the key rather than a silently different model.
#include "qkv/models/config.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "qkv/base/error.h"
#include "qkv/models/footprint.h"

namespace qkv::models {
namespace {

using Json = nlohmann::json;

template <class E, size_t N>
E parse_enum(std::string_view what, std::string_view s,
             const std::array<std::pair<std::string_view, E>, N>& choices) {
  for (const auto& [name, value] : choices)
    if (name == s) return value;
  std::string list;
  for (const auto& [name, value] : choices) list += (list.empty() ? "" : ", ") + std::string(name);
  QKV_THROW(ConfigError, "model config: ", what, " \"", s, "\" is not one of ", list);
}

constexpr std::array<std::pair<std::string_view, ModelType>, 2> kTypes{
    {{"rnn", ModelType::Rnn}, {"transformer", ModelType::Transformer}}};
constexpr std::array<std::pair<std::string_view, AttentionKind>, 6> kAttentions{
    {{"none", AttentionKind::None},
     {"dot", AttentionKind::Dot},
     {"scaled-dot", AttentionKind::ScaledDot},
     {"cosine", AttentionKind::Cosine},
     {"general", AttentionKind::General},
     {"additive", AttentionKind::Additive}}};
constexpr std::array<std::pair<std::string_view, CellType>, 2> kCells{
    {{"gru", CellType::Gru}, {"lstm", CellType::Lstm}}};

template <class E, size_t N>
std::string_view name_of(E value, const std::array<std::pair<std::string_view, E>, N>& choices) {
  for (const auto& [name, v] : choices)
    if (v == value) return name;
  return "?";
}

void check_positive(std::string_view key, int64_t value) {
  QKV_CHECK(value > 0, ConfigError, "model config: ", key, " = ", value, " must be positive");
}

void check_id(std::string_view key, int64_t id, int64_t vocab) {
  QKV_CHECK(id >= 0 && id < vocab, ConfigError, "model config: ", key, " = ", id,
            " is outside [0, vocab_size = ", vocab, ")");
}

bool luong(AttentionKind a) {
  return a == AttentionKind::Dot || a == AttentionKind::ScaledDot || a == AttentionKind::Cosine ||
         a == AttentionKind::General;
}

// Reads the JSON object key by key; every key must be read exactly once, and finish()
// rejects the ones nobody asked for.
class Reader {
 public:
  explicit Reader(const Json& object) : object_(object) {}

  const Json& at(const char* key) {
    const auto it = object_.find(key);
    QKV_CHECK(it != object_.end(), ConfigError, "model config: missing key \"", key, "\"");
    seen_.insert(key);
    return *it;
  }
  int64_t integer(const char* key) {
    const Json& v = at(key);
    const bool fits = v.is_number_integer() &&
                      (!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(INT64_MAX));
    QKV_CHECK(fits, ConfigError, "model config: key \"", key, "\" must be an integer (int64), got ",
              v.dump());
    return v.get<int64_t>();
  }
  double number(const char* key) {
    const Json& v = at(key);
    QKV_CHECK(v.is_number(), ConfigError, "model config: key \"", key, "\" must be a number, got ",
              v.dump());
    return v.get<double>();
  }
  bool boolean(const char* key) {
    const Json& v = at(key);
    QKV_CHECK(v.is_boolean(), ConfigError, "model config: key \"", key,
              "\" must be true or false, got ", v.dump());
    return v.get<bool>();
  }
  std::string string(const char* key) {
    const Json& v = at(key);
    QKV_CHECK(v.is_string(), ConfigError, "model config: key \"", key, "\" must be a string, got ",
              v.dump());
    return v.get<std::string>();
  }
  void finish() const {
    for (const auto& [key, value] : object_.items())
      QKV_CHECK(seen_.count(key) == 1, ConfigError, "model config: unknown key \"", key, "\"");
  }

 private:
  const Json& object_;
  std::set<std::string, std::less<>> seen_;
};

// Parses the text; a key repeated in the top-level object is an error (nlohmann would
// keep the last one silently).
Json parse_strict(std::string_view text) {
  std::set<std::string> keys;
  std::string duplicate;
  const Json::parser_callback_t on_event = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::key && depth == 1 && !keys.insert(parsed).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  Json json;
  try {
    json = Json::parse(text.begin(), text.end(), on_event);
  } catch (const Json::exception& e) {
    QKV_THROW(ConfigError, "model config: malformed JSON: ", e.what());
  }
  QKV_CHECK(duplicate.empty(), ConfigError, "model config: key \"", duplicate, "\" appears twice");
  QKV_CHECK(json.is_object(), ConfigError, "model config: expected a JSON object, got ",
            json.type_name());
  return json;
}

}  // namespace

std::string_view to_string(ModelType type) noexcept {
  return name_of(type, kTypes);
}
std::string_view to_string(AttentionKind kind) noexcept {
  return name_of(kind, kAttentions);
}
std::string_view to_string(CellType cell) noexcept {
  return name_of(cell, kCells);
}
ModelType parse_model_type(std::string_view s) {
  return parse_enum("type", s, kTypes);
}
AttentionKind parse_attention_kind(std::string_view s) {
  return parse_enum("attention", s, kAttentions);
}
CellType parse_cell_type(std::string_view s) {
  return parse_enum("cell", s, kCells);
}

void validate(const ModelConfig& c) {
  check_positive("vocab_size", c.vocab_size);
  check_positive("dim_emb", c.dim_emb);
  check_positive("dim_rnn", c.dim_rnn);
  check_positive("enc_depth", c.enc_depth);
  check_positive("dec_depth", c.dec_depth);
  check_positive("heads", c.heads);
  check_positive("dim_ffn", c.dim_ffn);
  check_positive("max_positions", c.max_positions);
  // The position table (max_positions × dim_emb values) is built with the model: a
  // config read from a file must not make it arbitrarily large.
  QKV_CHECK(c.max_positions <= kMaxPositionsLimit, ConfigError,
            "model config: max_positions = ", c.max_positions, " exceeds ", kMaxPositionsLimit,
            " (sentences that long cannot be trained or translated)");
  QKV_CHECK(std::isfinite(c.dropout) && c.dropout >= 0.0 && c.dropout < 1.0, ConfigError,
            "model config: dropout = ", c.dropout, " is outside [0, 1)");
  check_id("pad_id", c.pad_id, c.vocab_size);
  check_id("bos_id", c.bos_id, c.vocab_size);
  check_id("eos_id", c.eos_id, c.vocab_size);
  QKV_CHECK(c.pad_id != c.bos_id && c.pad_id != c.eos_id, ConfigError,
            "model config: pad_id = ", c.pad_id, " must differ from bos_id = ", c.bos_id,
            " and eos_id = ", c.eos_id);
  if (c.type == ModelType::Transformer) {
    QKV_CHECK(c.dim_emb % c.heads == 0, ConfigError, "model config: heads = ", c.heads,
              " does not divide dim_emb = ", c.dim_emb);
    QKV_CHECK(c.attention == AttentionKind::ScaledDot, ConfigError,
              "model config: attention = ", to_string(c.attention),
              ": the transformer uses scaled-dot attention");
    QKV_CHECK(!c.input_feeding, ConfigError,
              "model config: input_feeding is for an rnn with Luong attention, not a transformer");
  } else {
    QKV_CHECK(!c.input_feeding || luong(c.attention), ConfigError,
              "model config: input_feeding needs dot, scaled-dot, cosine or general attention, "
              "not ",
              to_string(c.attention));
  }
}

bool attends(const ModelConfig& c) noexcept {
  return c.type == ModelType::Transformer || c.attention != AttentionKind::None;
}

int64_t max_sequence_tokens(const ModelConfig& c) noexcept {
  return c.type == ModelType::Transformer ? c.max_positions - 1
                                          : std::numeric_limits<int64_t>::max();
}

std::string to_json(const ModelConfig& c, int indent) {
  Json j;
  j["type"] = to_string(c.type);
  j["attention"] = to_string(c.attention);
  j["cell"] = to_string(c.cell);
  j["vocab_size"] = c.vocab_size;
  j["dim_emb"] = c.dim_emb;
  j["dim_rnn"] = c.dim_rnn;
  j["enc_depth"] = c.enc_depth;
  j["dec_depth"] = c.dec_depth;
  j["heads"] = c.heads;
  j["dim_ffn"] = c.dim_ffn;
  j["dropout"] = c.dropout;
  j["tied_embeddings"] = c.tied_embeddings;
  j["input_feeding"] = c.input_feeding;
  j["pad_id"] = c.pad_id;
  j["bos_id"] = c.bos_id;
  j["eos_id"] = c.eos_id;
  j["max_positions"] = c.max_positions;
  return j.dump(indent);
}

ModelConfig from_json(std::string_view text) {
  const Json json = parse_strict(text);
  Reader r(json);
  ModelConfig c;
  c.type = parse_model_type(r.string("type"));
  c.attention = parse_attention_kind(r.string("attention"));
  c.cell = parse_cell_type(r.string("cell"));
  c.vocab_size = r.integer("vocab_size");
  c.dim_emb = r.integer("dim_emb");
  c.dim_rnn = r.integer("dim_rnn");
  c.enc_depth = r.integer("enc_depth");
  c.dec_depth = r.integer("dec_depth");
  c.heads = r.integer("heads");
  c.dim_ffn = r.integer("dim_ffn");
  c.dropout = r.number("dropout");
  c.tied_embeddings = r.boolean("tied_embeddings");
  c.input_feeding = r.boolean("input_feeding");
  c.pad_id = r.integer("pad_id");
  c.bos_id = r.integer("bos_id");
  c.eos_id = r.integer("eos_id");
  c.max_positions = r.integer("max_positions");
  r.finish();
  validate(c);
  return c;
}

}  // namespace qkv::models
