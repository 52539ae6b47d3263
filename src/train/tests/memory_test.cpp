// The training memory estimate: what it counts, the batch shapes it is evaluated on, and
// the ResourceError (naming the flags to reduce) before anything large is allocated.
#include "qkv/train/memory.h"

#include <gtest/gtest.h>

#include "pipeline_test_util.h"
#include "qkv/base/error.h"
#include "qkv/models/footprint.h"
#include "qkv/ops/flash_attention.h"
#include "qkv/train/trainer.h"

namespace qkv::train {
namespace {

using testing::throws_with;

// A transformer of 1.3e12 parameters: `qkv train --dim-emb 65536 --dim-ffn 1000000`.
models::ModelConfig absurd_model(int64_t vocab) {
  models::ModelConfig c = testing::tiny_transformer(vocab, 0.0);
  c.dim_emb = 65536;
  c.dim_ffn = 1000000;
  c.heads = 8;
  c.enc_depth = c.dec_depth = 3;
  return c;
}

TEST(TrainingMemory, TheModelPartIsSixteenBytesPerParameterPlusThePositionTable) {
  for (const models::ModelConfig& c :
       {testing::tiny_rnn(24, 0.1), testing::tiny_transformer(24, 0.1)}) {
    const TrainingMemory m = estimate_training_memory(c);
    const double numel = double(models::make_model(c, 1)->parameters().numel());
    EXPECT_EQ(m.parameters, numel);
    EXPECT_EQ(m.model_bytes, 16 * numel + 12 * models::footprint(c).position_table);
    EXPECT_EQ(m.activation_bytes, 0.0);
  }
}

// The fused loss holds two [chunk, V] buffers, not the [B·Tt, V] logits and their
// gradient: a batch much taller than a chunk costs far less than 2·B·Tt·V floats, while
// a batch within one chunk still holds its logits and their gradient whole.
TEST(TrainingMemory, ActivationsGrowWithTheBatchButHoldOnlyChunksOfTheLogits) {
  for (const models::ModelConfig& c :
       {testing::tiny_rnn(24, 0.1), testing::tiny_transformer(24, 0.1)}) {
    const BatchShape one{4, 9, 11}, two{8, 9, 11};
    const double a = estimate_training_memory(c, one).activation_bytes;
    EXPECT_GT(estimate_training_memory(c, two).activation_bytes, 1.5 * a);
    EXPECT_GE(a, 2.0 * 4 * 11 * 24 * 4);  // within one chunk: the logits and gradient whole
    models::ModelConfig wide = c;
    wide.vocab_size = 24000;
    const BatchShape tall{400, 9, 50};  // 20000 target rows, chunks of 87
    const double logits = 4.0 * 400 * 50 * 24000;
    const double w = estimate_training_memory(wide, tall).activation_bytes;
    EXPECT_GT(w, 2.0 * 4 * 87 * 24000);
    EXPECT_LT(w, logits);
  }
}

// Each attention call keeps its probabilities for backward when they fit the per-call
// budget (ops::kFlashKeepProbsBytes): the only part of the estimate that grows with the
// head count. Over the budget nothing is kept.
TEST(TrainingMemory, TransformersCountTheAttentionProbabilitiesKeptForBackward) {
  models::ModelConfig two = testing::tiny_transformer(24, 0.1);
  two.enc_depth = 2;
  two.dec_depth = 3;
  models::ModelConfig four = two;
  four.heads = 4;
  const BatchShape b{5, 70, 40};
  auto kept = [&](int64_t heads, int64_t tq, int64_t tk) {
    return double(ops::flash_attention_kept_bytes(5 * heads, tq, tk, ops::kFlashKeepProbsBytes));
  };
  auto per_model = [&](int64_t heads) {
    return 2 * kept(heads, 70, 70) + 3 * (kept(heads, 40, 40) + kept(heads, 40, 70));
  };
  EXPECT_GT(per_model(2), 4.0 * 5 * 2 * (2 * 70 * 70 + 3 * (40 * 40 + 40 * 70)));
  EXPECT_EQ(estimate_training_memory(four, b).activation_bytes -
                estimate_training_memory(two, b).activation_bytes,
            per_model(4) - per_model(2));
  EXPECT_EQ(ops::flash_attention_kept_bytes(64 * 8, 2048, 2048, ops::kFlashKeepProbsBytes), 0);
  EXPECT_GT(ops::flash_attention_kept_bytes(8, 512, 512, ops::kFlashKeepProbsBytes),
            8 * 512 * 512 * 4);
}

TEST(TrainingMemory, BatchShapesAreTheShapesMakeBatchBuilds) {
  data::TokenizedCorpus corpus;
  corpus.source = {{5, 6, 7}, {5}, {8, 9, 10, 11, 12}};
  corpus.target = {{6}, {7, 8, 9, 10}, {9, 9}};
  corpus.line_numbers = {1, 2, 3};
  data::BatchOptions options;
  for (const std::vector<int64_t>& indices : {std::vector<int64_t>{0}, {1, 2}, {2, 0, 1}, {0, 1}}) {
    const BatchShape s = batch_shape(corpus, indices, options);
    const data::Batch b = data::make_batch(corpus, indices, options);
    EXPECT_EQ(s.sentences, b.src.dim(0));
    EXPECT_EQ(s.source_length, b.src.dim(1));
    EXPECT_EQ(s.target_length, b.tgt_in.dim(1));
  }
  const models::ModelConfig c = testing::tiny_rnn(24, 0.0);
  const BatchShape largest = largest_batch(c, corpus, {{0}, {1, 2}, {1}}, options);
  EXPECT_EQ(largest.sentences, 2);
  EXPECT_EQ(largest.source_length, 6);
  EXPECT_EQ(largest.target_length, 5);
}

TEST(TrainingMemory, AModelTooLargeForMemoryIsAResourceErrorNamingTheModelFields) {
  EXPECT_NO_THROW(check_training_memory(testing::tiny_rnn(24, 0.0)));
  EXPECT_TRUE(throws_with<ResourceError>(
      [] { check_training_memory(absurd_model(8000)); },
      {"training this model (", "parameters", "dim_emb", "dim_ffn", "vocab_size"}));
}

TEST(TrainingMemory, ABatchTooLargeForMemoryIsAResourceErrorNamingMiniBatchWords) {
  const models::ModelConfig c = testing::tiny_transformer(8000, 0.0);
  EXPECT_NO_THROW(check_training_memory(c, {64, 30, 30}));
  // 10^6 sentences of 1000 tokens: the logits alone are 6.4e16 bytes.
  EXPECT_TRUE(throws_with<ResourceError>(
      [&] {
        check_training_memory(c, {1000000, 1000, 1000});
      },
      {"largest batch (1000000 sentences of up to 1000 source and 1000 target tokens",
       "vocabulary 8000", "reduce mini_batch_words", "max_length"}));
}

// An update of several micro-batches holds its sum and, on ranks > 0 of the ordered
// exchange, a copy of each micro-batch's gradient but the last.
TEST(TrainingMemory, AccumulationBuffersAreCountedAndNameAccumulate) {
  EXPECT_EQ(gradient_buffers_for(1, 1, true), 0);
  EXPECT_EQ(gradient_buffers_for(4, 1, true), 1);
  EXPECT_EQ(gradient_buffers_for(1, 2, false), 1);
  EXPECT_EQ(gradient_buffers_for(4, 3, false), 4);
  EXPECT_EQ(gradient_buffers_for(4, 3, true), 1);
  const models::ModelConfig c = testing::tiny_transformer(24, 0.1);
  const TrainingMemory plain = estimate_training_memory(c, {4, 5, 6});
  const TrainingMemory three = estimate_training_memory(c, {4, 5, 6}, 3);
  EXPECT_EQ(plain.accumulation_bytes, 0.0);
  EXPECT_EQ(three.accumulation_bytes, 12 * plain.parameters);
  EXPECT_EQ(three.total(), plain.total() + three.accumulation_bytes);
  EXPECT_NO_THROW(check_training_memory(c, {4, 5, 6}, 3));
  // The model and batch fit; 10^15 copies of its gradient do not.
  EXPECT_TRUE(throws_with<ResourceError>(
      [&] {
        check_training_memory(c, {4, 5, 6}, int64_t{1} << 50);
      },
      {"gradient-sized buffer(s)", "lower accumulate"}));
}

// The Trainer checks before it builds the model: without the check, building it would
// be the failure (or, below the physical memory, the OOM killer).
TEST(TrainingMemory, TheTrainerRefusesBeforeBuildingTheModel) {
  const auto dir = testing::test_dir();
  TrainingData data = testing::tiny_task(dir);
  const models::ModelConfig c = absurd_model(data.vocab.size());
  EXPECT_TRUE(throws_with<ResourceError>(
      [&] { Trainer(c, std::move(data), testing::tiny_options(dir / "run", 1)); },
      {"training on the largest batch", "dim_emb"}));
  EXPECT_FALSE(std::filesystem::exists(dir / "run")) << "nothing is written before the check";
}

}  // namespace
}  // namespace qkv::train
