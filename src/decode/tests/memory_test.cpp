// Decoding memory estimates: what they grow with, and the ResourceError beam search
// raises before it encodes a batch that cannot fit.
#include "qkv/decode/memory.h"

#include <gtest/gtest.h>

#include <string>

#include "qkv/base/error.h"
#include "qkv/decode/beam_search.h"

namespace qkv::decode {
namespace {

models::ModelConfig tiny(models::ModelType type, int64_t vocab) {
  models::ModelConfig c;
  c.type = type;
  c.attention = type == models::ModelType::Transformer ? models::AttentionKind::ScaledDot
                                                       : models::AttentionKind::Additive;
  c.vocab_size = vocab;
  c.dim_emb = 8;
  c.dim_rnn = 6;
  c.enc_depth = 1;
  c.dec_depth = 2;
  c.heads = 2;
  c.dim_ffn = 12;
  c.max_positions = 64;
  return c;
}

TEST(DecodeMemory, BeamSearchBytesGrowWithBeamBatchLengthAndVocabulary) {
  for (const auto type : {models::ModelType::Rnn, models::ModelType::Transformer}) {
    const models::ModelConfig c = tiny(type, 40);
    BeamSearchOptions o;
    const double base = beam_search_bytes(c, o, 4, 10);
    // At least the logits and log-probabilities [sentences·beam, V].
    EXPECT_GE(base, 2.0 * 4 * 5 * 40 * 4);
    EXPECT_DOUBLE_EQ(beam_search_bytes(c, o, 8, 10), 2 * base);
    BeamSearchOptions wide = o;
    wide.beam_size = 10;
    EXPECT_DOUBLE_EQ(beam_search_bytes(c, wide, 4, 10), 2 * base);
    EXPECT_GT(beam_search_bytes(c, o, 4, 20), base);
    // The vocabulary enters through the logits and log-probabilities only.
    EXPECT_DOUBLE_EQ(beam_search_bytes(tiny(type, 4040), o, 4, 10) - base, 2.0 * 4 * 5 * 4000 * 4);
    BeamSearchOptions kept = o;
    kept.keep_attention = true;
    EXPECT_GT(beam_search_bytes(c, kept, 4, 10), base);
  }
}

TEST(DecodeMemory, ForceDecodeBytesHoldTheLogits) {
  const models::ModelConfig c = tiny(models::ModelType::Transformer, 40);
  EXPECT_GE(force_decode_bytes(c, 3, 7, 9), 2.0 * 3 * 9 * 40 * 4);
  EXPECT_DOUBLE_EQ(force_decode_bytes(c, 6, 7, 9), 2 * force_decode_bytes(c, 3, 7, 9));
}

TEST(DecodeMemory, ABeamTooLargeForMemoryIsRefusedBeforeEncoding) {
  // 100000 sentences × beam 1000 × vocabulary 8000: 6.4 TB of log-probabilities per step.
  const models::ModelConfig c = tiny(models::ModelType::Transformer, 8000);
  const auto model = models::make_model(c, 1);
  model->set_training(false);
  const int64_t batch = 100000;
  const Tensor src = Tensor::full({batch, 2}, 3.0);
  const std::vector<int64_t> lengths(size_t(batch), 2);
  BeamSearchOptions o;
  o.beam_size = 1000;
  try {
    beam_search(*model, src, lengths, o);
    FAIL() << "no error";
  } catch (const ResourceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("beam search of 100000 sentences (beam size 1000"), std::string::npos)
        << what;
    EXPECT_NE(what.find(std::string(kReduceSearch)), std::string::npos) << what;
  }
  try {
    check_beam_search_memory(c, o, batch, 2, "reduce --beam-size");
    FAIL() << "no error";
  } catch (const ResourceError& e) {
    EXPECT_NE(std::string(e.what()).find("; reduce --beam-size"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_beam_search_memory(c, BeamSearchOptions{}, 32, 20));
}

}  // namespace
}  // namespace qkv::decode
