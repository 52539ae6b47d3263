#include "comparison_data.h"

#include <charconv>
#include <ctime>

#include "qkv/base/cpu.h"
#include "qkv/base/thread_pool.h"
#include "qkv/data/parallel_corpus.h"
#include "qkv/models/model_file.h"

namespace qkv::experiment {
namespace {

namespace fs = std::filesystem;

void keep_first(data::ParallelCorpus& c, int64_t n) {
  if (n <= 0 || int64_t(c.source.size()) <= n) return;
  c.source.resize(size_t(n));
  c.target.resize(size_t(n));
  c.line_numbers.resize(size_t(n));
  // The statistics describe the pairs used from here on.
  c.stats = {.read = n, .kept = n};
}

// spec.vocab, or one trained on the training corpora into out/vocab.spm.
data::Vocab comparison_vocab(const ComparisonSpec& spec, const data::TextReadOptions& read,
                             std::ostream& log) {
  if (spec.vocab) {
    data::Vocab v = data::Vocab::load(*spec.vocab);
    log << "[compare] vocabulary: " << spec.vocab->string() << " (" << v.size() << " pieces)\n";
    return v;
  }
  const auto& [src, tgt] = spec.train_sets;
  const fs::path file = spec.out / "vocab.spm";
  std::error_code ec;
  if (spec.reuse && fs::exists(file, ec)) {
    data::Vocab v = data::Vocab::load(file);
    log << "[compare] vocabulary: " << file.string() << " from the earlier run (--reuse, "
        << v.size() << " pieces)\n";
    return v;
  }
  const auto size = int32_t(spec.train.vocab_size);
  log << "[compare] vocabulary: training " << size << " SentencePiece pieces on " << src.string()
      << " and " << tgt.string() << " -> " << file.string() << "\n"
      << std::flush;
  data::train_vocab({src, tgt}, size, file,
                    {.seed = uint32_t(spec.train.seed),
                     .max_sentences = spec.max_sentences > 0 ? 2 * spec.max_sentences : 0,
                     .read = read});
  return data::Vocab::load(file);
}

std::string pairs_from(size_t pairs, const CorpusFiles& files) {
  return std::to_string(pairs) + " pairs from " + files.source.string() + " / " +
         files.target.string();
}

// Shortest text that reads back to the same value: 0.001, not 0.001000.
std::string number(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return {buf, r.ptr};
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string cpu_model() {
  const std::string& name = cpu_features().model_name;
  return name == "unknown" ? "unknown CPU" : name;
}

}  // namespace

ComparisonData load_comparison_data(const ComparisonSpec& spec, std::ostream& log) {
  TestSet test = read_test_set(spec.test_sets.source, spec.test_sets.target, spec.max_sentences);
  log << "[compare] test set: " << test.sources.size() << " sentences from "
      << spec.test_sets.source.string() << " / " << spec.test_sets.target.string() << "\n";
  data::TextReadOptions read;
  if (spec.train.skip_invalid) read.invalid = data::InvalidLines::Skip;
  ComparisonData d{.training = {.vocab = comparison_vocab(spec, read, log)},
                   .test = std::move(test)};

  data::ParallelCorpus corpus =
      data::read_parallel_corpus(spec.train_sets.source, spec.train_sets.target, read);
  const size_t read_pairs = corpus.source.size();
  keep_first(corpus, spec.max_sentences);
  d.train_description =
      pairs_from(corpus.source.size(), spec.train_sets) +
      (corpus.source.size() < read_pairs ? " (the first of " + std::to_string(read_pairs) + ")"
                                         : "");
  d.training.train =
      std::make_shared<data::TokenizedCorpus>(data::tokenize(corpus, d.training.vocab));
  log << "[compare] training data: " << d.train_description << "\n";
  if (spec.valid_sets) {
    data::ParallelCorpus valid =
        data::read_parallel_corpus(spec.valid_sets->source, spec.valid_sets->target, read);
    keep_first(valid, spec.max_sentences);
    d.training.valid = train::make_validation_set(valid, d.training.vocab);
    d.valid_description = pairs_from(valid.source.size(), *spec.valid_sets);
    log << "[compare] validation data: " << d.valid_description << "\n";
  }
  log << std::flush;
  return d;
}

std::vector<std::string> comparison_notes(const ComparisonSpec& spec, const ComparisonData& data) {
  const TrainSettings& t = spec.train;
  const SearchSettings& search = spec.search;
  std::vector<std::string> notes;
  notes.push_back("Command: " + spec.command);
  notes.push_back("Data: training " + data.train_description + "; validation " +
                  (data.valid_description.empty() ? "none" : data.valid_description) + "; test " +
                  std::to_string(data.test.sources.size()) + " sentences from " +
                  data.test.source_file.string() + " / " + data.test.reference_file.string() + ".");
  notes.push_back(
      "Every variant: the same " + std::to_string(data.training.vocab.size()) +
      "-piece SentencePiece vocabulary, seed " + std::to_string(t.seed) + ", budget --after " +
      t.after + ", batches of " + std::to_string(t.mini_batch_words) + " tokens, learning rate " +
      number(t.learn_rate) + " (" + std::string(to_string(t.lr_schedule)) + ", warmup " +
      std::to_string(t.warmup) + "); test translations by " +
      (search.beam_size == 1 ? std::string("greedy search")
                             : "beam search (beam " + std::to_string(search.beam_size) +
                                   ", length normalisation " + number(search.normalize) + ")") +
      ".");
  notes.push_back("Machine: " + cpu_model() + ", " + std::to_string(num_threads()) +
                  " threads; qkv " + models::qkv_version() + "; " + utc_now() + ".");
  notes.push_back(
      "Columns: BLEU and chrF2 on the test set as sacreBLEU computes them (13a tokenisation, "
      "exp smoothing; character 6-grams, beta 2), qkv's own implementation; BLEU a-b: per "
      "source length in words (n sentences); updates: training batches within the budget; "
      "train tok/s: source + target tokens per second of update time (validation and "
      "checkpoints left out); decode sent/s: test sentences translated per second; params: "
      "trainable parameters; peak RSS: the process's peak resident memory while the variant "
      "trained and translated (the shared data included); wall: training + evaluation.");
  return notes;
}

}  // namespace qkv::experiment
