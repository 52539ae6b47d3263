// Incremental decoding (encode -> initial_state -> step) against teacher forcing
// (forward_train), state reordering for beam search, and the rnn:none bottleneck.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model_test_util.h"
#include "qkv/autograd/variable.h"
#include "qkv/base/thread_pool.h"
#include "qkv/models/rnn_seq2seq.h"
#include "qkv/models/transformer.h"
#include "qkv/ops/sequence.h"
#include "qkv/testing/tensors.h"

namespace qkv::models {
namespace {

using namespace qkv::models::testing;  // NOLINT
using qkv::testing::all_close;
using qkv::testing::throws_with;

class EveryVariant : public ::testing::TestWithParam<Variant> {};

// Step-by-step decoding fed the reference prefix gives forward_train's log-softmax at
// every real position of every row (the transformer's cache, the rnn's carried state
// and h̃ all reproduce the full pass).
TEST_P(EveryVariant, StepwiseDecodingEqualsTeacherForcing) {
  const std::unique_ptr<Seq2Seq> model = make_model(GetParam().config, 7);
  model->set_training(false);
  const Batch batch = sample_batch();
  Tensor full;
  {
    const autograd::NoGradGuard no_grad;
    full = log_softmax_of(
        model->forward_train(batch.src, batch.src_lengths, batch.tgt_in, batch.tgt_lengths)
            .value());
  }
  ASSERT_EQ(full.shape(), Shape({3, batch.tgt_in.dim(1), kVocab}));
  const Stepped stepped = step_through(*model, batch, false);
  for (int64_t t = 0; t < batch.tgt_in.dim(1); ++t)
    for (int64_t b = 0; b < 3; ++b) {
      if (t >= batch.tgt_lengths[size_t(b)]) continue;
      const Tensor expected = ops::select(row(full, b), 1, t);  // [1, V]
      EXPECT_TRUE(all_close(row(stepped.log_probs[size_t(t)], b), expected, 1e-4, 0))
          << "row " << b << ", step " << t;
    }
}

// Dropout is active in training mode (two passes differ) and off in evaluation mode
// (two passes are identical).
TEST_P(EveryVariant, DropoutOnlyInTrainingMode) {
  ModelConfig config = GetParam().config;
  config.dropout = 0.3;
  const std::unique_ptr<Seq2Seq> model = make_model(config, 7);
  const Batch b = sample_batch();
  const autograd::NoGradGuard no_grad;
  auto run = [&] {
    return model->forward_train(b.src, b.src_lengths, b.tgt_in, b.tgt_lengths).value();
  };
  EXPECT_TRUE(model->training());
  EXPECT_FALSE(all_close(run(), run(), 1e-6, 0));
  model->set_training(false);
  EXPECT_FALSE(model->training());
  EXPECT_TRUE(qkv::testing::bitwise_equal(run(), run()));
}

// Two states from one encoding, fed the same prefix; reordering one by `indices` and
// feeding both the matching ids gives the gathered rows of the other.
TEST_P(EveryVariant, ReorderGathersRows) {
  const std::unique_ptr<Seq2Seq> model = make_model(GetParam().config, 7);
  model->set_training(false);
  const Batch batch = sample_batch();
  const EncoderOutput enc = model->encode(batch.src, batch.src_lengths);
  std::unique_ptr<DecoderState> a = model->initial_state(enc), b = model->initial_state(enc);
  for (const float id : {2.0f, 5.0f}) {
    const Tensor ids = Tensor::full({3}, id);
    model->step(ids, *a, false);
    model->step(ids, *b, false);
  }
  // Beam-style: rows repeat, one is dropped, the batch grows.
  const std::vector<int64_t> indices{2, 0, 0, 1, 2};
  b->reorder(indices);
  EXPECT_EQ(b->batch_size(), 5);
  EXPECT_EQ(b->steps(), 2);
  const Tensor ids_a = Tensor::from({3}, std::vector<float>{7, 8, 9});
  const Tensor ids_b = Tensor::from({5}, std::vector<float>{9, 7, 7, 8, 9});
  const StepOutput oa = model->step(ids_a, *a, true);
  const StepOutput ob = model->step(ids_b, *b, true);
  for (size_t i = 0; i < indices.size(); ++i) {
    EXPECT_TRUE(all_close(row(ob.log_probs, int64_t(i)), row(oa.log_probs, indices[i]), 1e-6, 0))
        << "row " << i;
    if (oa.attention.defined()) {
      EXPECT_TRUE(all_close(row(ob.attention, int64_t(i)), row(oa.attention, indices[i]), 1e-6, 0));
    }
  }
  // select() keeps a subset; a bad index is an IndexError naming it.
  b->select(std::vector<int64_t>{4});
  EXPECT_EQ(b->batch_size(), 1);
  EXPECT_TRUE(throws_with<IndexError>([&] { b->reorder(std::vector<int64_t>{1}); },
                                      {"indices[0] = 1", "[0, 1)"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { b->reorder(std::vector<int64_t>{}); }, {"no rows"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { model->step(ids_a, *b, false); }, {"prev_ids", "[1]"}));
}

// Beam search mostly moves rows within one sentence's beam (the transformer then keeps
// its cross-attention cache where it is) and sometimes across sentences (then the cache
// moves with the rows). Both against states that never moved: a reorder within equal
// sources equals feeding the moved ids; a reorder across sources before the first step
// equals encoding the moved sources.
TEST_P(EveryVariant, ReorderWithinAndAcrossSentences) {
  const std::unique_ptr<Seq2Seq> model = make_model(GetParam().config, 7);
  model->set_training(false);
  const Batch batch = sample_batch();
  const EncoderOutput enc = model->encode(batch.src, batch.src_lengths);
  // Within: two rows per sentence fed different ids, then each pair swapped.
  std::unique_ptr<DecoderState> moved = model->initial_state(enc);
  std::unique_ptr<DecoderState> fed = model->initial_state(enc);
  const std::vector<int64_t> pairs{0, 0, 1, 1, 2, 2}, swap{1, 0, 3, 2, 5, 4};
  moved->reorder(pairs);
  fed->reorder(pairs);
  model->step(Tensor::from({6}, std::vector<float>{5, 6, 7, 8, 9, 10}), *moved, false);
  model->step(Tensor::from({6}, std::vector<float>{6, 5, 8, 7, 10, 9}), *fed, false);
  moved->reorder(swap);
  const Tensor next = Tensor::from({6}, std::vector<float>{4, 5, 6, 7, 8, 9});
  const StepOutput om = model->step(next, *moved, true);
  const StepOutput of = model->step(next, *fed, true);
  EXPECT_TRUE(all_close(om.log_probs, of.log_probs, 1e-6, 0));
  if (of.attention.defined()) {
    EXPECT_TRUE(all_close(om.attention, of.attention, 1e-6, 0));
  }
  // Across: rows of sentences 1, 2, 0 against the sources encoded in that order.
  std::unique_ptr<DecoderState> across = model->initial_state(enc);
  across->reorder(std::vector<int64_t>{1, 2, 0});
  const Batch permuted =
      make_batch({{8, 9, 3}, {10, 4, 5, 3}, {4, 5, 6, 7, 3}}, {{9, 8}, {5, 4, 10}, {7, 6, 5, 4}});
  std::unique_ptr<DecoderState> direct =
      model->initial_state(model->encode(permuted.src, permuted.src_lengths));
  for (const float id : {2.0f, 5.0f, 6.0f}) {
    const Tensor ids = Tensor::full({3}, id);
    const StepOutput oa = model->step(ids, *across, true);
    const StepOutput od = model->step(ids, *direct, true);
    EXPECT_TRUE(all_close(oa.log_probs, od.log_probs, 1e-6, 0)) << "id " << id;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, EveryVariant, ::testing::ValuesIn(all_variants()),
                         [](const auto& p) { return p.param.name; });

// A beam-sized state (caches large enough that a reorder splits them over the pool):
// reordered by a permutation with cycles and repeated rows, the next step equals the
// unmoved state's rows gathered, bit for bit the same for 1 and 2 threads.
TEST(TransformerDecoding, ReorderOverThePoolGathersRowsForAnyThreadCount) {
  const int saved_threads = num_threads();
  const std::unique_ptr<Seq2Seq> model = make_model(tiny_transformer(), 7);
  model->set_training(false);
  const Batch batch = sample_batch();
  const EncoderOutput enc = model->encode(batch.src, batch.src_lengths);
  constexpr int64_t kRows = 256, kSteps = 10;  // 4 caches x 256 rows x 10 positions x 8 dims
  std::vector<int64_t> expand, moves;
  for (int64_t r = 0; r < kRows; ++r) {
    expand.push_back(r % 3);
    moves.push_back(r < 200 ? (r * 37 + 11) % 200 : r % 50);  // cycles, then repeats
  }
  auto ids_at = [](int64_t t, const std::vector<int64_t>& of_row) {
    std::vector<float> ids;
    for (const int64_t r : of_row) ids.push_back(float(4 + (r * 5 + t) % 7));
    return Tensor::from({int64_t(of_row.size())}, ids);
  };
  std::vector<int64_t> identity(kRows);
  for (int64_t r = 0; r < kRows; ++r) identity[size_t(r)] = r;
  auto run = [&](bool reorder) {
    std::unique_ptr<DecoderState> state = model->initial_state(enc);
    state->reorder(expand);
    for (int64_t t = 0; t < kSteps; ++t) model->step(ids_at(t, identity), *state, false);
    if (reorder) state->reorder(moves);
    return model->step(ids_at(kSteps, reorder ? moves : identity), *state, false).log_probs;
  };
  set_num_threads(1);
  const Tensor unmoved = run(false);
  const Tensor one = run(true);
  set_num_threads(2);
  const Tensor two = run(true);
  set_num_threads(saved_threads);
  EXPECT_TRUE(qkv::testing::bitwise_equal(one, two));
  for (int64_t r = 0; r < kRows; ++r)
    ASSERT_TRUE(all_close(row(two, r), row(unmoved, moves[size_t(r)]), 1e-6, 0)) << "row " << r;
}

// Decoder states take the caches that finished states gave back (to skip fresh buffers
// batch after batch): a state made after others, of another size, with states alive at
// once, or outliving its model, steps exactly as a fresh model's first state.
TEST(TransformerDecoding, StatesThatReuseFinishedStatesCachesStepAsFreshOnes) {
  const Batch first = sample_batch();
  const Batch second = row_of(first, 1);
  auto fresh = [&] {
    const std::unique_ptr<Seq2Seq> model = make_model(tiny_transformer(), 11);
    model->set_training(false);
    return step_through(*model, second, false).log_probs;
  };
  const std::vector<Tensor> want = fresh();

  std::unique_ptr<Seq2Seq> model = make_model(tiny_transformer(), 11);
  model->set_training(false);
  const auto& transformer = dynamic_cast<const Transformer&>(*model);
  const EncoderOutput enc = model->encode(first.src, first.src_lengths);
  EXPECT_EQ(transformer.spare_decoder_caches(), 0);
  {
    // A beam-sized state grown past the caches' first capacity (32 positions), and a
    // second one alive beside it. Destroyed in reverse order, a gives its caches back
    // first: they are the set the passes below reuse (b's are freed).
    std::unique_ptr<DecoderState> b = model->initial_state(enc);
    std::unique_ptr<DecoderState> a = model->initial_state(enc);
    const std::vector<int64_t> beam{0, 0, 1, 1, 2, 2, 2, 1};
    a->reorder(beam);
    for (int64_t t = 0; t < 40; ++t) {
      std::vector<float> ids(beam.size(), float(4 + t % 5));
      model->step(Tensor::from({int64_t(beam.size())}, ids), *a, false);
    }
    model->step(Tensor::from({3}, std::vector<float>{4, 5, 6}), *b, false);
    EXPECT_EQ(transformer.spare_decoder_caches(), 0);
  }
  EXPECT_EQ(transformer.spare_decoder_caches(), 1);  // a's; b's were freed
  for (int pass = 0; pass < 3; ++pass) {             // reusing the sets given back, again and again
    const std::vector<Tensor> got = step_through(*model, second, false).log_probs;
    ASSERT_EQ(got.size(), want.size());
    for (size_t t = 0; t < got.size(); ++t)
      ASSERT_TRUE(qkv::testing::bitwise_equal(got[t], want[t])) << "pass " << pass << " t " << t;
  }
  // A state that outlives its model gives its caches back safely (the pool is shared).
  const EncoderOutput enc2 = model->encode(second.src, second.src_lengths);
  std::unique_ptr<DecoderState> last = model->initial_state(enc2);
  EXPECT_EQ(transformer.spare_decoder_caches(), 0);  // taken
  model->step(Tensor::from({1}, std::vector<float>{2}), *last, false);
  model.reset();
  EXPECT_EQ(last->steps(), 1);
  last.reset();
}

// rnn:none: the decoder reads the source only through its initial state.
TEST(RnnNone, SourceReachesTheDecoderOnlyThroughTheInitialState) {
  RnnSeq2Seq model(tiny_rnn(AttentionKind::None, CellType::Lstm), 3);
  model.set_training(false);
  const Batch batch = sample_batch();
  const EncoderOutput enc = model.encode(batch.src, batch.src_lengths);
  const Tensor bos = Tensor::full({3}, 2.0f);

  auto first_step = [&](const EncoderOutput& e) {
    auto state = model.initial_state(e);
    return model.step(bos, *state, /*want_attention=*/true);
  };
  const StepOutput reference = first_step(enc);
  EXPECT_FALSE(reference.attention.defined());  // there is no attention to report

  // Poisoning the memory changes nothing: the decoder never reads it.
  EncoderOutput poisoned = enc;
  poisoned.memory = Tensor::full(enc.memory.shape(), std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(qkv::testing::bitwise_equal(first_step(poisoned).log_probs, reference.log_probs));

  // Changing a source token changes the final states, and through them the output.
  Batch changed = batch;
  changed.src = batch.src.clone();
  changed.src.at<float>({0, 1}) = 10.0f;
  const EncoderOutput enc2 = model.encode(changed.src, changed.src_lengths);
  EXPECT_FALSE(all_close(enc2.final_states[0], enc.final_states[0], 1e-6, 0));
  EXPECT_FALSE(all_close(row(first_step(enc2).log_probs, 0), row(reference.log_probs, 0), 1e-6, 0));
  // ...and only through them: the new memory with the old final states decodes as before.
  EncoderOutput mixed = enc2;
  mixed.final_states = enc.final_states;
  EXPECT_TRUE(qkv::testing::bitwise_equal(first_step(mixed).log_probs, reference.log_probs));
}

TEST(Interface, MakeModelPicksTheType) {
  EXPECT_NE(
      dynamic_cast<RnnSeq2Seq*>(make_model(tiny_rnn(AttentionKind::Dot, CellType::Gru), 1).get()),
      nullptr);
  EXPECT_NE(dynamic_cast<Transformer*>(make_model(tiny_transformer(), 1).get()), nullptr);
  ModelConfig bad = tiny_transformer();
  bad.heads = 3;
  EXPECT_TRUE(throws_with<ConfigError>([&] { make_model(bad, 1); }, {"heads"}));
  EXPECT_TRUE(throws_with<ConfigError>([&] { RnnSeq2Seq(tiny_transformer(), 1); },
                                       {"transformer", "not rnn"}));
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] { Transformer(tiny_rnn(AttentionKind::None, CellType::Gru), 1); }, {"not transformer"}));
}

// The same seed gives the same parameters; the parameters live in the model's store.
TEST(Interface, ParametersAreDeterministicAndTied) {
  const auto a = make_model(tiny_transformer(), 5), b = make_model(tiny_transformer(), 5);
  EXPECT_TRUE(qkv::testing::bitwise_equal(a->parameters().values(), b->parameters().values()));
  const nn::ParameterStore& store = a->parameters();
  EXPECT_TRUE(
      store.get("encoder.embeddings.weight").same_as(store.get("decoder.embeddings.weight")));
  EXPECT_FALSE(store.contains("decoder.output.weight"));
  ModelConfig untied = tiny_transformer();
  untied.tied_embeddings = false;
  const auto u = make_model(untied, 5);
  EXPECT_FALSE(u->parameters()
                   .get("encoder.embeddings.weight")
                   .same_as(u->parameters().get("decoder.embeddings.weight")));
  EXPECT_TRUE(u->parameters().contains("decoder.output.weight"));
  EXPECT_EQ(u->parameters().numel(),
            store.numel() + kVocab * 8 /*second table*/ + kVocab * 8 + kVocab /*output*/);
}

TEST(Interface, BadInputsAreTypedErrors) {
  const auto rnn = make_model(tiny_rnn(AttentionKind::General, CellType::Gru), 1);
  const auto tf = make_model(tiny_transformer(), 1);
  const Batch b = sample_batch();
  for (Seq2Seq* m : {rnn.get(), tf.get()}) {
    EXPECT_TRUE(throws_with<ShapeError>(
        [&] {
          m->encode(b.src, std::vector<int64_t>{3, 2});
        },
        {"src", "2 lengths", "batch of 3"}));
    EXPECT_TRUE(throws_with<ValueError>(
        [&] {
          m->encode(b.src, std::vector<int64_t>{3, 0, 2});
        },
        {"src", "lengths[1] = 0"}));
    EXPECT_TRUE(throws_with<ValueError>(
        [&] {
          m->forward_train(b.src, b.src_lengths, b.tgt_in, std::vector<int64_t>{9, 1, 1});
        },
        {"tgt_in", "lengths[0] = 9"}));
    Tensor bad_ids = b.src.clone();
    bad_ids.at<float>({1, 0}) = float(kVocab);
    EXPECT_THROW(m->encode(bad_ids, b.src_lengths), IndexError);
  }
  const EncoderOutput enc = rnn->encode(b.src, b.src_lengths);
  auto rnn_state = rnn->initial_state(enc);
  EXPECT_TRUE(throws_with<ValueError>([&] { tf->step(Tensor::full({3}, 2.0f), *rnn_state, false); },
                                      {"not made by a transformer"}));
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] { rnn->step(Tensor::full({3}, 2.0f), *rnn_state, true, {.layer = 1}); },
      {"one attention"}));
  auto tf_state = tf->initial_state(tf->encode(b.src, b.src_lengths));
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] { tf->step(Tensor::full({3}, 2.0f), *tf_state, true, {.layer = 0, .head = 2}); },
      {"head 2"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { tf->initial_state(enc); }, {"memory"}));
}

}  // namespace
}  // namespace qkv::models
