// ModelConfig's JSON: a round trip of every field, and every rejection naming its key.
#include "qkv/models/config.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/models/seq2seq.h"
#include "qkv/testing/tensors.h"

namespace qkv::models {
namespace {

using qkv::testing::throws_with;
using Json = nlohmann::json;

ModelConfig unusual() {
  ModelConfig c;
  c.type = ModelType::Rnn;
  c.attention = AttentionKind::Cosine;
  c.cell = CellType::Gru;
  c.vocab_size = 321;
  c.dim_emb = 17;
  c.dim_rnn = 19;
  c.enc_depth = 3;
  c.dec_depth = 2;
  c.heads = 5;
  c.dim_ffn = 23;
  c.dropout = 0.123456789012345;
  c.tied_embeddings = false;
  c.input_feeding = true;
  c.pad_id = 7;
  c.bos_id = 8;
  c.eos_id = 9;
  c.max_positions = 77;
  return c;
}

TEST(ConfigJson, RoundTripsEveryField) {
  for (const ModelConfig& c : {ModelConfig{}, unusual()}) {
    EXPECT_EQ(from_json(to_json(c)), c);
    EXPECT_EQ(from_json(to_json(c, 2)), c);
  }
  const Json j = Json::parse(to_json(unusual()));
  EXPECT_EQ(j.at("type"), "rnn");
  EXPECT_EQ(j.at("attention"), "cosine");
  EXPECT_EQ(j.at("cell"), "gru");
  EXPECT_EQ(j.size(), 17u);
}

TEST(ConfigJson, EnumNames) {
  for (const auto a : {AttentionKind::None, AttentionKind::Dot, AttentionKind::ScaledDot,
                       AttentionKind::Cosine, AttentionKind::General, AttentionKind::Additive})
    EXPECT_EQ(parse_attention_kind(to_string(a)), a);
  EXPECT_EQ(to_string(AttentionKind::ScaledDot), "scaled-dot");
  EXPECT_EQ(parse_model_type("transformer"), ModelType::Transformer);
  EXPECT_EQ(parse_cell_type("lstm"), CellType::Lstm);
  EXPECT_TRUE(throws_with<ConfigError>([] { parse_attention_kind("luong"); },
                                       {"attention \"luong\"", "none, dot, scaled-dot"}));
  EXPECT_TRUE(
      throws_with<ConfigError>([] { parse_cell_type("GRU"); }, {"cell \"GRU\"", "gru, lstm"}));
  EXPECT_TRUE(throws_with<ConfigError>([] { parse_model_type(""); }, {"type \"\""}));
}

// The JSON of the default config with `key` replaced by `value` (or removed when null).
std::string with(const std::string& key, const Json& value) {
  Json j = Json::parse(to_json(ModelConfig{}));
  if (value.is_null())
    j.erase(key);
  else
    j[key] = value;
  return j.dump();
}

TEST(ConfigJson, RejectsMalformedText) {
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json("{\"type\": "); }, {"malformed JSON"}));
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(""); }, {"malformed JSON"}));
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json("[1, 2]"); }, {"expected a JSON object"}));
  std::string twice = to_json(ModelConfig{});
  twice.insert(1, "\"heads\": 4, ");
  EXPECT_TRUE(throws_with<ConfigError>([&] { from_json(twice); }, {"\"heads\"", "twice"}));
}

TEST(ConfigJson, RejectsMissingAndExtraKeys) {
  for (const char* key :
       {"type", "attention", "cell", "vocab_size", "dim_emb", "dim_rnn", "enc_depth", "dec_depth",
        "heads", "dim_ffn", "dropout", "tied_embeddings", "input_feeding", "pad_id", "bos_id",
        "eos_id", "max_positions"})
    EXPECT_TRUE(throws_with<ConfigError>([&] { from_json(with(key, nullptr)); },
                                         {"missing key \"" + std::string(key) + "\""}))
        << key;
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(with("dim_model", 512)); },
                                       {"unknown key \"dim_model\""}));
}

TEST(ConfigJson, RejectsWrongTypes) {
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(with("heads", "8")); },
                                       {"\"heads\"", "integer", "\"8\""}));
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(with("dim_emb", 512.5)); },
                                       {"\"dim_emb\"", "integer"}));
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(with("vocab_size", 18446744073709551615u)); },
                                       {"\"vocab_size\"", "int64"}));
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(with("dropout", "0.1")); },
                                       {"\"dropout\"", "number"}));
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(with("tied_embeddings", 1)); },
                                       {"\"tied_embeddings\"", "true or false"}));
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(with("type", 1)); }, {"\"type\"", "string"}));
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(with("attention", "bilinear")); },
                                       {"attention \"bilinear\""}));
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(with("cell", "rnn")); }, {"cell \"rnn\""}));
}

TEST(ConfigValidation, RejectsBadValuesNamingTheKey) {
  for (const char* key : {"vocab_size", "dim_emb", "dim_rnn", "enc_depth", "dec_depth", "heads",
                          "dim_ffn", "max_positions"})
    for (const int value : {0, -3})
      EXPECT_TRUE(
          throws_with<ConfigError>([&] { from_json(with(key, value)); },
                                   {std::string(key) + " = " + std::to_string(value), "positive"}))
          << key;
  for (const double p : {-0.1, 1.0, 2.5})
    EXPECT_TRUE(
        throws_with<ConfigError>([&] { from_json(with("dropout", p)); }, {"dropout", "[0, 1)"}));
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(with("heads", 7)); },
                                       {"heads = 7", "dim_emb = 512"}));
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(with("eos_id", 8000)); },
                                       {"eos_id = 8000", "vocab_size = 8000"}));
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(with("pad_id", -1)); }, {"pad_id = -1"}));
  EXPECT_TRUE(
      throws_with<ConfigError>([] { from_json(with("bos_id", 0)); }, {"pad_id = 0", "bos_id = 0"}));
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(with("attention", "additive")); },
                                       {"attention = additive", "scaled-dot"}));
  EXPECT_TRUE(throws_with<ConfigError>([] { from_json(with("input_feeding", true)); },
                                       {"input_feeding", "transformer"}));

  ModelConfig rnn;
  rnn.type = ModelType::Rnn;
  rnn.heads = 7;  // ignored by the rnn
  rnn.attention = AttentionKind::Additive;
  EXPECT_NO_THROW(validate(rnn));
  rnn.input_feeding = true;
  EXPECT_TRUE(throws_with<ConfigError>([&] { validate(rnn); }, {"input_feeding", "not additive"}));
  rnn.attention = AttentionKind::None;
  EXPECT_TRUE(throws_with<ConfigError>([&] { validate(rnn); }, {"input_feeding", "not none"}));
  rnn.attention = AttentionKind::General;
  EXPECT_NO_THROW(validate(rnn));
}

TEST(ConfigQueries, AttendsUnlessAnRnnWithoutAttention) {
  ModelConfig c;
  EXPECT_TRUE(attends(c));  // the default Transformer
  c.type = ModelType::Rnn;
  for (const AttentionKind a : {AttentionKind::Dot, AttentionKind::ScaledDot, AttentionKind::Cosine,
                                AttentionKind::General, AttentionKind::Additive}) {
    c.attention = a;
    EXPECT_TRUE(attends(c)) << to_string(a);
  }
  c.attention = AttentionKind::None;
  EXPECT_FALSE(attends(c));
}

// The limit is the model's own: a Transformer encodes max_sequence_tokens tokens plus
// their EOS and refuses one more; an rnn has none.
TEST(ConfigQueries, MaxSequenceTokensIsWhatATransformerEncodes) {
  ModelConfig c;
  c.vocab_size = 16;
  c.dim_emb = 8;
  c.heads = 2;
  c.dim_ffn = 8;
  c.enc_depth = 1;
  c.dec_depth = 1;
  c.max_positions = 6;
  ASSERT_EQ(max_sequence_tokens(c), 5);
  const auto model = make_model(c, 1);
  const auto source = [](int64_t tokens) {  // tokens words, then EOS
    std::vector<float> ids(size_t(tokens), 5.0f);
    ids.push_back(3.0f);
    return Tensor::from({1, tokens + 1}, ids);
  };
  const std::vector<int64_t> fits = {max_sequence_tokens(c) + 1};
  EXPECT_NO_THROW(model->encode(source(max_sequence_tokens(c)), fits));
  const std::vector<int64_t> over = {max_sequence_tokens(c) + 2};
  EXPECT_THROW(model->encode(source(max_sequence_tokens(c) + 1), over), ValueError);
  c.type = ModelType::Rnn;
  EXPECT_EQ(max_sequence_tokens(c), std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace qkv::models
