#include "compare_support.h"

#include <charconv>
#include <ctime>
#include <fstream>

#include "qkv/base/error.h"
#include "qkv/base/thread_pool.h"
#include "qkv/data/parallel_corpus.h"
#include "qkv/experiment/train_flags.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

// As the option parser decides: "-x", "--x" are flags; "-", "-3", "-.5" are values.
bool looks_like_flag(const std::string& tok) {
  return tok.size() >= 2 && tok[0] == '-' && !(tok[1] >= '0' && tok[1] <= '9') && tok[1] != '.';
}

cli::ParsedOptions parse_train(std::vector<std::string> args, const fs::path& model) {
  args.insert(args.end(), {"--model", model.string()});
  return experiment::train_options().parse(args);
}

std::vector<std::string> variant_args(const CompareSetup& setup, const experiment::Variant& v,
                                      const fs::path& out) {
  std::vector<std::string> args = setup.train_args;
  if (v.heads > 0) {
    // transformer:h<N> overrides the comparison's --heads (a flag may be given only once).
    for (size_t i = 0; i < args.size();) {
      if (args[i] == "--heads" && i + 1 < args.size())
        args.erase(args.begin() + long(i), args.begin() + long(i) + 2);
      else if (args[i].starts_with("--heads="))
        args.erase(args.begin() + long(i));
      else
        ++i;
    }
    args.insert(args.end(), {"--heads", std::to_string(v.heads)});
  }
  args.insert(args.end(), {"--type", std::string(models::to_string(v.type))});
  if (v.type == models::ModelType::Rnn)
    args.insert(args.end(), {"--attention", std::string(models::to_string(v.attention))});
  args.insert(args.end(), {"--model", (out / "models" / v.file_name()).string()});
  return args;
}

std::pair<fs::path, fs::path> pair_of(const std::vector<std::string>& files, const char* flag) {
  QKV_CHECK(files.size() == 2, ConfigError, "--", flag,
            " takes two files (source and target), got ", files.size());
  return {files[0], files[1]};
}

void keep_first(data::ParallelCorpus& c, int64_t n) {
  if (n <= 0 || int64_t(c.source.size()) <= n) return;
  c.source.resize(size_t(n));
  c.target.resize(size_t(n));
  c.line_numbers.resize(size_t(n));
  // The statistics describe the pairs used from here on.
  c.stats = {.read = n, .kept = n};
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("model name")) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
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

}  // namespace

SplitArgs split_args(const cli::OptionSet& own, const std::vector<std::string>& args) {
  const cli::OptionSet train = experiment::train_options();
  SplitArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out.own.push_back(a);
      continue;
    }
    const size_t eq = a.find('=');
    const std::string name = a.starts_with("--") ? a.substr(2, eq - 2) : std::string();
    const cli::Option* mine = name.empty() || name == "config" ? nullptr : own.find(name);
    if (mine == nullptr) {
      if (!name.empty() && train.find(name) == nullptr) {
        std::string guess = own.closest_name(name);
        if (guess.empty()) guess = train.closest_name(name);
        QKV_CHECK(guess.empty(), ConfigError, "unknown flag --", name, "; did you mean --", guess,
                  "?");
        QKV_THROW(ConfigError, "unknown flag --", name,
                  "; see `qkv compare --help` and `qkv train --help`");
      }
      out.train.push_back(a);
      continue;
    }
    out.own.push_back(a);
    if (eq != std::string::npos || mine->type() == cli::OptionType::Switch) continue;
    if (mine->type() == cli::OptionType::StringList) {
      while (i + 1 < args.size() && !looks_like_flag(args[i + 1])) out.own.push_back(args[++i]);
    } else if (i + 1 < args.size() && !looks_like_flag(args[i + 1])) {
      out.own.push_back(args[++i]);
    }
  }
  return out;
}

CompareSetup compare_setup(std::vector<std::string> train_args, const fs::path& out,
                           const std::string& default_budget,
                           const std::vector<std::string>& test_sets) {
  for (const std::string& a : train_args)
    QKV_CHECK(a != "--model" && !a.starts_with("--model="), ConfigError,
              "--model: compare writes each variant's model to --out DIR/models/<variant>; "
              "drop --model");
  cli::ParsedOptions shared = parse_train(train_args, out / "models");
  for (const char* flag : {"type", "attention"})
    QKV_CHECK(!shared.is_set(flag), ConfigError, "--", flag,
              ": compare sets each model's type and attention from --variants (e.g. "
              "rnn:none,rnn:additive,transformer); drop --",
              flag);
  QKV_CHECK(!shared.get<bool>("resume"), ConfigError,
            "--resume: compare trains every variant anew; drop --resume");
  if (!shared.is_set("after")) {
    train_args.insert(train_args.end(), {"--after", default_budget});
    shared = parse_train(train_args, out / "models");
  }
  pair_of(shared.get_list("train-sets"), "train-sets");
  if (!shared.get_list("valid-sets").empty()) pair_of(shared.get_list("valid-sets"), "valid-sets");
  pair_of(test_sets, "test-sets");
  if (shared.get<int64_t>("threads") > 0) set_num_threads(int(shared.get<int64_t>("threads")));
  const std::string budget = shared.get<std::string>("after");
  return {.train_args = std::move(train_args),
          .shared = std::move(shared),
          .budget = budget,
          .test_sets = test_sets};
}

void check_variant_flags(const CompareSetup& setup, const experiment::Variant& variant,
                         const fs::path& out) {
  const cli::ParsedOptions p = experiment::train_options().parse(variant_args(setup, variant, out));
  experiment::model_config_from(p, std::max<int64_t>(p.get<int64_t>("vocab-size"), 5));
  experiment::trainer_options_from(p);
}

experiment::VariantPlan variant_plan(const CompareSetup& setup, const experiment::Variant& variant,
                                     const data::Vocab& vocab, const fs::path& out) {
  const cli::ParsedOptions p = experiment::train_options().parse(variant_args(setup, variant, out));
  return {.variant = variant,
          .config = experiment::model_config_from(p, vocab),
          .trainer = experiment::trainer_options_from(p)};
}

namespace {

// --vocab, or one trained on the training corpora into out/vocab.spm.
data::Vocab compare_vocab(const cli::ParsedOptions& p, const fs::path& out, int64_t max_sentences,
                          const data::TextReadOptions& read, std::ostream& log, bool reuse) {
  if (p.has("vocab")) {
    data::Vocab v = data::Vocab::load(p.get<fs::path>("vocab"));
    log << "[compare] vocabulary: " << p.get<fs::path>("vocab").string() << " (" << v.size()
        << " pieces)\n";
    return v;
  }
  const auto [src, tgt] = pair_of(p.get_list("train-sets"), "train-sets");
  const fs::path file = out / "vocab.spm";
  std::error_code ec;
  if (reuse && fs::exists(file, ec)) {
    data::Vocab v = data::Vocab::load(file);
    log << "[compare] vocabulary: " << file.string() << " from the earlier run (--reuse, "
        << v.size() << " pieces)\n";
    return v;
  }
  const auto size = int32_t(p.get<int64_t>("vocab-size"));
  log << "[compare] vocabulary: training " << size << " SentencePiece pieces on " << src.string()
      << " and " << tgt.string() << " -> " << file.string() << "\n"
      << std::flush;
  data::train_vocab({src, tgt}, size, file,
                    {.seed = uint32_t(p.get<int64_t>("seed")),
                     .max_sentences = max_sentences > 0 ? 2 * max_sentences : 0,
                     .read = read});
  return data::Vocab::load(file);
}

}  // namespace

CompareData load_compare_data(const CompareSetup& setup, const fs::path& out, int64_t max_sentences,
                              std::ostream& log, bool reuse_vocab) {
  const cli::ParsedOptions& p = setup.shared;
  experiment::TestSet test =
      experiment::read_test_set(setup.test_sets[0], setup.test_sets[1], max_sentences);
  log << "[compare] test set: " << test.sources.size() << " sentences from " << setup.test_sets[0]
      << " / " << setup.test_sets[1] << "\n";
  data::TextReadOptions read;
  if (p.get<bool>("skip-invalid")) read.invalid = data::InvalidLines::Skip;
  CompareData d{.training = {.vocab = compare_vocab(p, out, max_sentences, read, log, reuse_vocab)},
                .test = std::move(test)};

  const auto [src, tgt] = pair_of(p.get_list("train-sets"), "train-sets");
  data::ParallelCorpus corpus = data::read_parallel_corpus(src, tgt, read);
  const size_t read_pairs = corpus.source.size();
  keep_first(corpus, max_sentences);
  d.train_description =
      std::to_string(corpus.source.size()) + " pairs from " + src.string() + " / " + tgt.string() +
      (corpus.source.size() < read_pairs ? " (the first of " + std::to_string(read_pairs) + ")"
                                         : "");
  d.training.train =
      std::make_shared<data::TokenizedCorpus>(data::tokenize(corpus, d.training.vocab));
  log << "[compare] training data: " << d.train_description << "\n";
  if (!p.get_list("valid-sets").empty()) {
    const auto [vsrc, vtgt] = pair_of(p.get_list("valid-sets"), "valid-sets");
    data::ParallelCorpus valid = data::read_parallel_corpus(vsrc, vtgt, read);
    keep_first(valid, max_sentences);
    d.training.valid = train::make_validation_set(valid, d.training.vocab);
    d.valid_description = std::to_string(valid.source.size()) + " pairs from " + vsrc.string() +
                          " / " + vtgt.string();
    log << "[compare] validation data: " << d.valid_description << "\n";
  }
  log << std::flush;
  return d;
}

std::vector<std::string> comparison_notes(const CompareSetup& setup, const CompareData& data,
                                          const experiment::SearchSettings& search) {
  const cli::ParsedOptions& p = setup.shared;
  std::vector<std::string> notes;
  notes.push_back("Command: " + setup.command);
  notes.push_back("Data: training " + data.train_description + "; validation " +
                  (data.valid_description.empty() ? "none" : data.valid_description) + "; test " +
                  std::to_string(data.test.sources.size()) + " sentences from " +
                  data.test.source_file.string() + " / " + data.test.reference_file.string() + ".");
  notes.push_back(
      "Every variant: the same " + std::to_string(data.training.vocab.size()) +
      "-piece SentencePiece vocabulary, seed " + std::to_string(p.get<int64_t>("seed")) +
      ", budget --after " + setup.budget + ", batches of " +
      std::to_string(p.get<int64_t>("mini-batch-words")) + " tokens, learning rate " +
      number(p.get<double>("learn-rate")) + " (" + p.get<std::string>("lr-schedule") + ", warmup " +
      std::to_string(p.get<int64_t>("warmup")) + "); test translations by " +
      (search.beam_size == 1 ? std::string("greedy search")
                             : "beam search (beam " + std::to_string(search.beam_size) +
                                   ", length normalisation " + number(search.normalize) + ")") +
      ".");
  notes.push_back("Machine: " + cpu_model() + ", " + std::to_string(num_threads()) +
                  " threads; qkv " + QKV_TOOL_VERSION + "; " + utc_now() + ".");
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

std::string quote_args(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyz"
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                         "-_=./:,+@%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (const char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace qkv::tool
