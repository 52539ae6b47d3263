// qkv demo: the README's main job. On Multi30k En->De (shipped in data/multi30k), trains
// the RNN without attention, the RNN with Bahdanau attention and a Transformer within one
// time budget, translates the test set with each, prints the comparison table and writes
// the HTML report: `qkv compare` with settings chosen to fit the budget on 2 cores.
#include <cmath>
#include <iostream>

#include "command.h"
#include "experiment_commands.h"
#include "qkv/base/error.h"
#include "qkv/cli/options.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

constexpr const char* kVariants = "rnn:none,rnn:additive,transformer";
constexpr int kModels = 3;
// Share of the budget spent training; the rest goes to the vocabulary, reading the data,
// translating the test set three times and the report: on a 2-core VM about 15 s plus
// 2-10 s per model for the 1000 test sentences (beam 5).
constexpr double kTrainShare = 0.9;
constexpr double kSetupSeconds = 20;  // vocabulary + tokenising 29k pairs

// The demo's model and training settings. Small models (128-wide, a 4000-piece vocabulary)
// so that in ~4.4 minutes on 2 cores an RNN sees the training data about three times and
// the 3-layer Transformer about once; so short a run underfits, hence no dropout, a
// constant learning rate after a short warmup, and 2048-token batches for more updates.
const std::vector<std::string> kTrainFlags = {
    "--vocab-size", "4000",  "--dim-emb",     "128",      "--dim-rnn",          "128",
    "--dim-ffn",    "512",   "--heads",       "4",        "--mini-batch-words", "2048",
    "--learn-rate", "0.002", "--lr-schedule", "constant", "--warmup",           "100",
    "--dropout",    "0",     "--disp-freq",   "25",       "--save-freq",        "0",
    "--valid-freq", "0"};

cli::OptionSet demo_options() {
  cli::OptionSet o;
  o.add_double("minutes", 15,
               "Total time budget in minutes: 90% trains the three models (a third "
               "each), the rest builds the vocabulary, translates the test set and writes the "
               "report.")
      .range(0.1, 100000);
  o.add_path("out", "qkv-demo",
             "Directory for the results (replaced if it holds an earlier demo): report.html, "
             "compare.csv, compare.json, bleu_by_length.svg, models/, hyps/.")
      .metavar("DIR");
  o.add_path("data", QKV_DEMO_DATA_DIR,
             "Multi30k directory with train, val and test_2016_flickr .en.gz/.de.gz files.")
      .metavar("DIR");
  o.add_int("max-sentences", 0,
            "Use only the first N training and test pairs (0: all): for smoke tests.")
      .range(0, 1e12);
  o.add_int("threads", 2, "Worker threads (0: QKV_NUM_THREADS or all cores).").range(0, 256);
  o.add_int("beam-size", 5, "Beam size for the test set (1: greedy).").range(1, 1000);
  return o;
}

fs::path corpus_file(const fs::path& dir, const std::string& name) {
  const fs::path f = dir / name;
  std::error_code ec;
  QKV_CHECK(fs::exists(f, ec), IoError, "--data ", dir.string(), ": no ", name,
            " there; the demo needs Multi30k's train, val and test_2016_flickr .en.gz/.de.gz "
            "files (shipped in the repository at data/multi30k)");
  return f;
}

std::string seconds_text(double s) {
  return std::to_string(int64_t(std::floor(s))) + "s";
}

int demo(const cli::ParsedOptions& p) {
  const fs::path data = p.get<fs::path>("data");
  const double total = p.get<double>("minutes") * 60;
  const int64_t max_sentences = p.get<int64_t>("max-sentences");
  const double setup = max_sentences > 0 ? 2 : kSetupSeconds;
  const double per_model = std::max(5.0, (total * kTrainShare - setup) / kModels);
  std::vector<std::string> args = {"--train-sets",
                                   corpus_file(data, "train.en.gz").string(),
                                   corpus_file(data, "train.de.gz").string(),
                                   "--test-sets",
                                   corpus_file(data, "test_2016_flickr.en.gz").string(),
                                   corpus_file(data, "test_2016_flickr.de.gz").string(),
                                   "--variants",
                                   kVariants,
                                   "--out",
                                   p.get<fs::path>("out").string(),
                                   "--report",
                                   "--overwrite",
                                   "--title",
                                   "qkv demo: Multi30k English to German, three systems",
                                   "--beam-size",
                                   std::to_string(p.get<int64_t>("beam-size")),
                                   "--after",
                                   seconds_text(per_model),
                                   "--threads",
                                   std::to_string(p.get<int64_t>("threads"))};
  args.insert(args.end(), kTrainFlags.begin(), kTrainFlags.end());
  if (max_sentences > 0) {
    args.insert(args.end(), {"--max-sentences", std::to_string(max_sentences)});
    // A few hundred sentences cannot support 4000 pieces.
    const int64_t vocab = std::clamp<int64_t>(max_sentences, 100, 4000);
    for (size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == "--vocab-size") args[i + 1] = std::to_string(vocab);
  }
  std::cerr << "[demo] Multi30k En->De from " << data.string() << ": training " << kVariants
            << " for " << seconds_text(per_model) << " each on " << p.get<int64_t>("threads")
            << " threads ("
            << (max_sentences > 0 ? "the first " + std::to_string(max_sentences) + " pairs"
                                  : std::string("29,000 pairs"))
            << "), then translating test_2016_flickr (beam " << p.get<int64_t>("beam-size")
            << "); budget " << p.get<double>("minutes") << " min; results in "
            << p.get<fs::path>("out").string() << "\n";
  return run_compare(args);
}

}  // namespace

int demo_main(int argc, const char* const* argv) {
  return run_guarded("demo", [&] {
    const cli::OptionSet options = demo_options();
    const cli::ParsedOptions p = options.parse(argc, argv);
    if (p.help_requested()) {
      std::cout << options.format_help(
          "qkv", "demo",
          "The main job: on Multi30k En->De (shipped in the repository), trains an RNN "
          "without attention, an RNN with attention (Bahdanau) and a Transformer within "
          "--minutes on 2 cores, translates the test set with each, prints the comparison "
          "table and writes DIR/report.html. It runs `qkv compare` with small models and "
          "a per-model time budget.");
      return kExitOk;
    }
    return demo(p);
  });
}

}  // namespace qkv::tool
