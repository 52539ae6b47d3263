#include "qkv/experiment/demo.h"

#include <algorithm>
#include <cmath>

#include "qkv/base/field_error.h"

namespace qkv::experiment {
namespace {

namespace fs = std::filesystem;

constexpr int kModels = 3;
// Share of the budget spent training; the rest goes to the vocabulary, reading the data,
// translating the test set three times and the report: on a 2-core VM about 15 s plus
// 2-10 s per model for the 1000 test sentences (beam 5).
constexpr double kTrainShare = 0.9;
constexpr double kSetupSeconds = 20;  // vocabulary + tokenising 29k pairs

fs::path corpus_file(const fs::path& dir, const std::string& name) {
  const fs::path f = dir / name;
  std::error_code ec;
  QKV_CHECK(fs::exists(f, ec), FieldIoError, "{data} ", dir.string(), ": no ", name,
            " there; the demo needs Multi30k's train, val and test_2016_flickr .en.gz/.de.gz "
            "files (shipped in the repository at data/multi30k)");
  return f;
}

std::string seconds_text(double s) {
  return std::to_string(int64_t(std::floor(s))) + "s";
}

}  // namespace

ComparisonSpec demo_spec(const DemoSettings& demo) {
  ComparisonSpec s;
  s.train_sets = {corpus_file(demo.data, "train.en.gz"), corpus_file(demo.data, "train.de.gz")};
  s.test_sets = {corpus_file(demo.data, "test_2016_flickr.en.gz"),
                 corpus_file(demo.data, "test_2016_flickr.de.gz")};
  s.variants = parse_variants(kDemoVariants);
  s.out = demo.out;
  s.report = true;
  s.overwrite = true;
  s.title = "qkv demo: Multi30k English to German, three systems";
  s.search.beam_size = demo.beam_size;
  s.search.normalize = demo.normalize;

  const double setup = demo.max_sentences > 0 ? 2 : kSetupSeconds;
  const double per_model = std::max(5.0, (demo.minutes * 60 * kTrainShare - setup) / kModels);
  s.train.after = seconds_text(per_model);
  s.train.threads = demo.threads;
  s.train.vocab_size = 4000;
  s.model.dim_emb = 128;
  s.model.dim_rnn = 128;
  s.model.dim_ffn = 512;
  s.model.heads = 4;
  s.model.dropout = 0;
  s.train.mini_batch_words = 2048;
  s.train.learn_rate = 0.002;
  s.train.lr_schedule = train::LrSchedule::Constant;
  s.train.warmup = 100;
  s.train.disp_freq = 25;
  s.train.save_freq = 0;
  s.train.valid_freq = 0;
  if (demo.max_sentences > 0) {
    s.max_sentences = demo.max_sentences;
    // A few hundred sentences cannot support 4000 pieces.
    s.train.vocab_size = std::clamp<int64_t>(demo.max_sentences, 100, 4000);
  }
  return s;
}

}  // namespace qkv::experiment
