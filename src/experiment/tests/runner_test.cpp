// One variant start to finish on a tiny synthetic task (reverse a short word sequence):
// training under an update budget, the saved model translated and scored, speed and
// memory measured, attention samples for a model that attends.
#include "qkv/experiment/runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "qkv/base/error.h"
#include "qkv/data/parallel_corpus.h"
#include "qkv/decode/force_decode.h"
#include "qkv/experiment/attention_entropy.h"
#include "qkv/experiment/resources.h"
#include "qkv/experiment/samples.h"
#include "qkv/experiment/validators.h"
#include "qkv/testing/tiny_corpus.h"
#include "qkv/train/checkpoint.h"

namespace qkv::experiment {
namespace {

namespace fs = std::filesystem;

// n pairs of 2..8 words from the first 10 of qkv_test_support's lexicon.
void write_corpus(const fs::path& src, const fs::path& tgt, int n, uint64_t seed) {
  qkv::testing::write_tiny_corpus(
      src, tgt, qkv::testing::tiny_corpus(n, seed, {.words = 10, .length_spread = 7}));
}

class RunnerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::path(::testing::TempDir()) / ("qkv_experiment_runner." + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_corpus(dir_ / "train.src", dir_ / "train.tgt", 300, 1);
    write_corpus(dir_ / "valid.src", dir_ / "valid.tgt", 20, 2);
    write_corpus(dir_ / "test.src", dir_ / "test.tgt", 24, 3);
    data::train_vocab({dir_ / "train.src", dir_ / "train.tgt"}, 40, dir_ / "vocab.spm");
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  train::TrainingData data(bool with_valid) const {
    train::TrainingData d{.vocab = data::Vocab::load(dir_ / "vocab.spm")};
    d.train = std::make_shared<data::TokenizedCorpus>(data::tokenize(
        data::read_parallel_corpus(dir_ / "train.src", dir_ / "train.tgt"), d.vocab));
    if (with_valid)
      d.valid = train::make_validation_set(
          data::read_parallel_corpus(dir_ / "valid.src", dir_ / "valid.tgt"), d.vocab);
    return d;
  }

  VariantPlan plan(const std::string& variant, const data::Vocab& vocab) const {
    VariantPlan p{.variant = parse_variants(variant).at(0), .label = "[" + variant + "]"};
    p.config.type = p.variant.type;
    p.config.attention = p.variant.attention;
    p.config.cell = models::CellType::Gru;
    p.config.vocab_size = vocab.size();
    p.config.dim_emb = p.config.dim_rnn = 16;
    p.config.enc_depth = p.config.dec_depth = 1;
    p.config.heads = 2;
    p.config.dim_ffn = 32;
    p.config.dropout = 0;
    p.trainer.model_dir = dir_ / "models" / p.variant.file_name();
    p.trainer.batch.mini_batch_words = 256;
    p.trainer.batch.max_length = 40;
    p.trainer.schedule = {.kind = train::LrSchedule::Constant, .learning_rate = 3e-3, .warmup = 5};
    p.trainer.after.updates = 30;
    p.trainer.valid_freq = 10;
    p.trainer.validation_observers = standard_validators();  // as trainer_options installs
    return p;
  }

  static fs::path dir_;
};
fs::path RunnerTest::dir_;

TEST_F(RunnerTest, TrainsTranslatesScoresAndMeasuresAnAttentionModel) {
  const train::TrainingData d = data(/*with_valid=*/true);
  const TestSet test = read_test_set(dir_ / "test.src", dir_ / "test.tgt");
  const EvalSettings settings{.search = {.beam_size = 2},
                              .sample_lines = {0, 5, 100},
                              .bootstrap = eval::BootstrapOptions{.samples = 200}};
  const VariantOutcome o = run_variant(plan("rnn:additive", d.vocab), d, test, settings, nullptr);
  const VariantResult& r = o.result;
  EXPECT_EQ(r.name, "rnn:additive");
  EXPECT_EQ(r.updates, 30);
  EXPECT_GT(r.parameters, 0);
  EXPECT_EQ(r.stop_reason, "update limit reached");
  ASSERT_TRUE(r.best_valid_loss.has_value());
  EXPECT_EQ(r.evaluated_file, train::kBestModelFile);
  EXPECT_TRUE(fs::exists(dir_ / "models" / "rnn-additive" / train::kModelFile));
  EXPECT_GT(r.train_tokens, 0);
  EXPECT_GT(r.train_tokens_per_second, 0);
  EXPECT_EQ(r.test_sentences, 24);
  EXPECT_EQ(o.hypotheses.size(), 24u);
  EXPECT_GE(r.bleu, 0);
  EXPECT_LE(r.bleu, 100);
  EXPECT_TRUE(r.bleu_line.starts_with("BLEU|nrefs:1|")) << r.bleu_line;
  EXPECT_EQ(r.by_length.size(), 6u);
  EXPECT_EQ(r.by_length[0].sentences, 24);  // every test sentence has 2..8 words
  // The bootstrap interval brackets the score, for the set and its one filled bucket.
  ASSERT_TRUE(r.bleu_low && r.bleu_high);
  EXPECT_LE(*r.bleu_low, r.bleu);
  EXPECT_GE(*r.bleu_high, r.bleu);
  ASSERT_TRUE(r.by_length[0].bleu_low && r.by_length[0].bleu_high);
  EXPECT_EQ(*r.by_length[0].bleu_low, *r.bleu_low);  // the same sentences, the same seed
  EXPECT_FALSE(r.by_length[1].bleu_low.has_value());
  // Attention entropy between one-hot (0) and uniform attention.
  ASSERT_TRUE(r.attention_entropy && r.attention_entropy_uniform);
  EXPECT_GE(*r.attention_entropy, 0);
  EXPECT_LE(*r.attention_entropy, *r.attention_entropy_uniform);
  EXPECT_GT(*r.attention_entropy_uniform, std::log(2.0));  // sources of 2..8 words plus EOS
  EXPECT_GT(r.decode_sentences_per_second, 0);
  EXPECT_GT(r.peak_rss_bytes, 0);
  EXPECT_GE(r.wall_seconds, r.decode_seconds);
  // Line 100 does not exist; the others give word-level maps (no ▁, no </s>).
  EXPECT_EQ(o.sample_lines, (std::vector<size_t>{0, 5}));
  ASSERT_EQ(o.samples.size(), 2u);
  EXPECT_EQ(o.samples[0].title, "rnn:additive, test sentence 1");
  EXPECT_EQ(o.samples[0].source.size(), size_t(eval::source_words(test.sources[0])));
  for (const std::string& w : o.samples[0].source) {
    EXPECT_EQ(w.find("\xE2\x96\x81"), std::string::npos) << w;
    EXPECT_NE(w, "</s>");
  }
}

TEST_F(RunnerTest, NoAttentionModelHasNoSamplesAndNoValidationEvaluatesTheLastModel) {
  const train::TrainingData d = data(/*with_valid=*/false);
  const TestSet test = read_test_set(dir_ / "test.src", dir_ / "test.tgt", /*max_sentences=*/7);
  EXPECT_EQ(test.sources.size(), 7u);
  const EvalSettings settings{.search = {.beam_size = 1}, .sample_lines = {0}};
  const VariantOutcome o = run_variant(plan("rnn:none", d.vocab), d, test, settings, nullptr);
  EXPECT_FALSE(o.result.best_valid_loss.has_value());
  EXPECT_EQ(o.result.evaluated_file, train::kModelFile);
  EXPECT_TRUE(o.samples.empty());
  EXPECT_EQ(o.hypotheses.size(), 7u);
  EXPECT_FALSE(o.result.attention_entropy.has_value());  // nothing to measure
  EXPECT_FALSE(o.result.bleu_low.has_value());           // no bootstrap asked for
}

// --reuse: a model trained earlier is evaluated as run_variant would, keeping the earlier
// run's training fields.
TEST_F(RunnerTest, EvaluateVariantScoresAnEarlierModelLikeRunVariant) {
  const train::TrainingData d = data(/*with_valid=*/false);
  const TestSet test = read_test_set(dir_ / "test.src", dir_ / "test.tgt");
  VariantPlan p = plan("rnn:general", d.vocab);
  p.trainer.after.updates = 12;
  const EvalSettings settings{.search = {.beam_size = 2}, .sample_lines = {1}};
  const VariantOutcome trained = run_variant(p, d, test, settings, nullptr);
  const VariantOutcome again =
      evaluate_variant(p, trained.result, d.vocab, test, settings, nullptr);
  EXPECT_EQ(again.hypotheses, trained.hypotheses);
  EXPECT_EQ(again.result.bleu, trained.result.bleu);
  EXPECT_EQ(again.result.by_length, trained.result.by_length);
  EXPECT_EQ(again.result.attention_entropy, trained.result.attention_entropy);
  EXPECT_EQ(again.result.updates, 12);
  EXPECT_EQ(again.result.train_tokens, trained.result.train_tokens);
  EXPECT_EQ(again.sample_lines, trained.sample_lines);
  EXPECT_GE(again.result.wall_seconds, again.result.train_seconds);
  // A missing model is the loader's error, not a silent empty result.
  VariantPlan gone = p;
  gone.trainer.model_dir = dir_ / "models" / "no-such-model";
  EXPECT_THROW(evaluate_variant(gone, trained.result, d.vocab, test, settings, nullptr), Error);
}

double entropy_by_hand(std::span<const float> row) {
  double h = 0;
  for (const float w : row)
    if (w > 0) h += -double(w) * std::log(double(w));
  return h;
}

TEST(AttentionEntropy, RowEntropyOfKnownDistributions) {
  const std::vector<float> uniform4(4, 0.25f), onehot = {0, 1, 0}, half = {0.5f, 0.5f, 0};
  EXPECT_NEAR(row_entropy(uniform4), std::log(4.0), 1e-12);
  EXPECT_EQ(row_entropy(onehot), 0.0);
  EXPECT_NEAR(row_entropy(half), std::log(2.0), 1e-12);
}

// attention_entropy against a by-hand average over every (layer, head) of rows taken one
// sentence at a time: batching, padding and the head enumeration must not matter.
TEST_F(RunnerTest, AttentionEntropyAveragesEveryHeadOverRealTokens) {
  const data::Vocab vocab = data::Vocab::load(dir_ / "vocab.spm");
  const TestSet test = read_test_set(dir_ / "test.src", dir_ / "test.tgt");
  for (const std::string& variant : {std::string("transformer"), std::string("rnn:cosine")}) {
    models::ModelConfig c = plan(variant, vocab).config;
    c.dec_depth = 2;
    auto model = models::make_model(c, 5);
    const auto h = attention_entropy(*model, vocab, test.sources, test.references, 7);
    ASSERT_TRUE(h.has_value()) << variant;
    const int64_t heads = variant == "transformer" ? 2 * 2 : 1;
    EXPECT_EQ(h->heads, heads) << variant;
    EXPECT_EQ(h->skipped, 0);
    double sum = 0, uniform = 0;
    int64_t rows = 0;
    for (size_t i = 0; i < test.sources.size(); ++i) {
      const std::vector<std::vector<int32_t>> src = {vocab.encode(test.sources[i])};
      const std::vector<std::vector<int32_t>> tgt = {vocab.encode(test.references[i])};
      const data::Batch b = source_batch(src, c);
      const auto ts = size_t(b.src_lengths[0]);
      rows += int64_t(tgt[0].size()) + 1;
      uniform += double(tgt[0].size() + 1) * std::log(double(ts));
      for (int64_t l = 0; l < (heads > 1 ? 2 : 1); ++l)
        for (int64_t hd = 0; hd < (heads > 1 ? 2 : 1); ++hd) {
          const models::AttentionSelection which =
              heads > 1 ? models::AttentionSelection{l, hd} : models::AttentionSelection{};
          const auto att = decode::forced_attention(*model, b.src, b.src_lengths, tgt, which);
          ASSERT_EQ(att[0].size(), (tgt[0].size() + 1) * ts);
          for (size_t r = 0; r < att[0].size(); r += ts)
            sum += entropy_by_hand(std::span(att[0]).subspan(r, ts));
        }
    }
    EXPECT_EQ(h->rows, rows) << variant;
    EXPECT_NEAR(h->mean, sum / double(rows * heads), 1e-5) << variant;
    EXPECT_NEAR(h->uniform, uniform / double(rows), 1e-9) << variant;
    EXPECT_LE(h->mean, h->uniform + 1e-6) << variant;
  }
  // A model without attention has none to measure; bad arguments are typed errors.
  auto none = models::make_model(plan("rnn:none", vocab).config, 5);
  EXPECT_FALSE(attention_entropy(*none, vocab, test.sources, test.references).has_value());
  auto model = models::make_model(plan("rnn:dot", vocab).config, 5);
  EXPECT_THROW(attention_entropy(*model, vocab, test.sources, std::span(test.references).first(3)),
               ValueError);
  EXPECT_THROW(attention_entropy(*model, vocab, test.sources, test.references, 0), ConfigError);
  // Pairs that tokenise to nothing are counted, not measured.
  const std::vector<std::string> src = {"", test.sources[0]}, ref = {test.references[0], ""};
  EXPECT_FALSE(attention_entropy(*model, vocab, src, ref).has_value());
}

// A sentence translates the same in any mini-batch (beam_search's contract), and beam
// size 1 (greedy_decode) makes beam search's choices.
TEST_F(RunnerTest, TranslationDoesNotDependOnMiniBatchAndBeamOneIsGreedy) {
  const train::TrainingData d = data(/*with_valid=*/false);
  VariantPlan p = plan("transformer", d.vocab);
  p.trainer.after.updates = 15;
  p.trainer.model_dir = dir_ / "models" / "transformer-batches";
  const TestSet test = read_test_set(dir_ / "test.src", dir_ / "test.tgt");
  run_variant(p, d, test, {.search = {.beam_size = 1}}, nullptr);
  train::LoadedModel m = train::load_model(p.trainer.model_dir / train::kModelFile);
  for (const int64_t beam : {1, 3}) {
    const auto one =
        translate_sentences(*m.model, d.vocab, test.sources, {.beam_size = beam, .mini_batch = 1});
    const auto many =
        translate_sentences(*m.model, d.vocab, test.sources, {.beam_size = beam, .mini_batch = 16});
    EXPECT_EQ(one.hypotheses, many.hypotheses) << "beam " << beam;
  }
}

TEST(Resources, PeakMemoryIsMeasured) {
  reset_peak_rss();
  const int64_t before = peak_rss_bytes();
  EXPECT_GT(before, 0);
  std::vector<char> big(size_t(64) << 20, 1);  // touched: resident
  EXPECT_GE(peak_rss_bytes(), before + (int64_t(60) << 20) * (big[12345] == 1 ? 1 : 0));
}

TEST(PickSamples, PrefersReadableLengthsInFileOrder) {
  const std::vector<std::string> s = {"a b", "one two three four five six", "x", "1 2 3 4 5 6 7",
                                      "a b c d e f g h i j k l m n o p q"};
  EXPECT_EQ(pick_samples(s, 2), (std::vector<size_t>{1, 3}));
  EXPECT_EQ(pick_samples(s, 3), (std::vector<size_t>{0, 1, 3}));
  EXPECT_EQ(pick_samples(s, 9).size(), 5u);
}

}  // namespace
}  // namespace qkv::experiment
