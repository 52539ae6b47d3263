// footprint(): the parameter count from the config alone equals what make_model()
// registers, for every kind of model, and absurd configs are counted without allocating.
#include "qkv/models/footprint.h"

#include <gtest/gtest.h>

#include <cmath>

#include "qkv/base/error.h"
#include "qkv/models/seq2seq.h"
#include "qkv/testing/tensors.h"

namespace qkv::models {
namespace {

using qkv::testing::throws_with;

ModelConfig small(ModelType type) {
  ModelConfig c;
  c.type = type;
  c.attention = type == ModelType::Transformer ? AttentionKind::ScaledDot : AttentionKind::None;
  c.vocab_size = 29;
  c.dim_emb = 6;
  c.dim_rnn = 5;
  c.enc_depth = 2;
  c.dec_depth = 3;
  c.heads = 2;
  c.dim_ffn = 7;
  c.max_positions = 33;
  return c;
}

void expect_exact(const ModelConfig& c) {
  const ModelFootprint f = footprint(c);
  EXPECT_EQ(f.parameters, double(make_model(c, 1)->parameters().numel())) << to_json(c);
  EXPECT_EQ(f.position_table,
            c.type == ModelType::Transformer ? double(c.max_positions * c.dim_emb) : 0.0);
}

TEST(Footprint, CountsEveryRnnParameterExactly) {
  for (const AttentionKind a :
       {AttentionKind::None, AttentionKind::Dot, AttentionKind::ScaledDot, AttentionKind::Cosine,
        AttentionKind::General, AttentionKind::Additive})
    for (const CellType cell : {CellType::Gru, CellType::Lstm})
      for (const bool tied : {true, false})
        for (const bool feeding : {false, true}) {
          ModelConfig c = small(ModelType::Rnn);
          c.attention = a;
          c.cell = cell;
          c.tied_embeddings = tied;
          c.input_feeding = feeding && a != AttentionKind::None && a != AttentionKind::Additive;
          expect_exact(c);
          c.enc_depth = 1;
          c.dec_depth = 1;
          expect_exact(c);
        }
}

TEST(Footprint, CountsEveryTransformerParameterExactly) {
  for (const bool tied : {true, false})
    for (const int64_t depth : {1, 2, 3}) {
      ModelConfig c = small(ModelType::Transformer);
      c.tied_embeddings = tied;
      c.enc_depth = depth;
      c.dec_depth = 4 - depth;
      expect_exact(c);
    }
}

TEST(Footprint, AbsurdConfigsAreCountedWithoutAllocatingOrOverflowing) {
  ModelConfig c = small(ModelType::Transformer);
  c.vocab_size = 8000;
  c.dim_emb = 65536;
  c.heads = 8;
  c.dim_ffn = 1000000;
  c.enc_depth = c.dec_depth = 64;
  const ModelFootprint f = footprint(c);
  // 64 encoder and 64 decoder layers of 2·E·F each dominate: > 8e12 parameters.
  EXPECT_GT(f.parameters, 8e12);
  EXPECT_TRUE(std::isfinite(f.parameters));
  c.vocab_size = c.dim_emb = int64_t{1} << 62;
  c.heads = 1;
  EXPECT_TRUE(std::isfinite(footprint(c).parameters));
}

TEST(Footprint, InvalidConfigsAndHugePositionTablesAreConfigErrors) {
  ModelConfig c = small(ModelType::Transformer);
  c.dim_emb = 0;
  EXPECT_TRUE(throws_with<ConfigError>([&] { footprint(c); }, {"dim_emb"}));
  c = small(ModelType::Transformer);
  c.max_positions = kMaxPositionsLimit + 1;
  EXPECT_TRUE(throws_with<ConfigError>([&] { footprint(c); }, {"max_positions", "131072"}));
  EXPECT_TRUE(throws_with<ConfigError>([&] { make_model(c, 1); }, {"max_positions"}));
  c.max_positions = kMaxPositionsLimit;
  EXPECT_EQ(footprint(c).position_table, double(kMaxPositionsLimit * c.dim_emb));
}

}  // namespace
}  // namespace qkv::models
