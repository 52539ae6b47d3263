// qkv demo: the README's main job, `qkv compare` with the settings of experiment/demo.h:
// on Multi30k En->De, three systems within one time budget, the table and the report.
#include <iostream>

#include "command.h"
#include "qkv/cli/common_options.h"
#include "qkv/cli/field_names.h"
#include "qkv/cli/options.h"
#include "qkv/experiment/demo.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

cli::OptionSet demo_options() {
  const experiment::DemoSettings d;
  cli::OptionSet o;
  o.add_double("minutes", d.minutes,
               "Total time budget in minutes: 90% trains the three models (a third "
               "each), the rest builds the vocabulary, translates the test set and writes the "
               "report.")
      .range(0.1, 100000);
  o.add_path("out", d.out.string(),
             "Directory for the results (replaced if it holds an earlier demo): report.html, "
             "compare.csv, compare.json, bleu_by_length.svg, models/, hyps/.")
      .metavar("DIR");
  o.add_path("data", QKV_DEMO_DATA_DIR,
             "Multi30k directory with train, val and test_2016_flickr .en.gz/.de.gz files.")
      .metavar("DIR");
  o.add_int("max-sentences", d.max_sentences,
            "Use only the first N training and test pairs (0: all): for smoke tests.")
      .range(0, 1e12);
  // 2, not the other commands' 0 (all cores): the budget's split is timed on 2 cores.
  o.add_int("threads", d.threads, "Worker threads (0: QKV_NUM_THREADS or all cores).")
      .range(0, 256);
  cli::add_search_options(o, 0);  // the test set's search: no --max-length-factor
  return o;
}

experiment::DemoSettings demo_settings(const cli::ParsedOptions& p) {
  return {.minutes = p.get<double>("minutes"),
          .out = p.get<fs::path>("out"),
          .data = p.get<fs::path>("data"),
          .max_sentences = p.get<int64_t>("max-sentences"),
          .threads = p.get<int64_t>("threads"),
          .beam_size = cli::search_values(p).beam_size,
          .normalize = cli::search_values(p).normalize};
}

void announce(const experiment::DemoSettings& d, const experiment::ComparisonSpec& spec) {
  std::cerr << "[demo] Multi30k En->De from " << d.data.string() << ": training "
            << experiment::kDemoVariants << " for " << spec.train.after << " each on " << d.threads
            << " threads ("
            << (d.max_sentences > 0 ? "the first " + std::to_string(d.max_sentences) + " pairs"
                                    : std::string("29,000 pairs"))
            << "), then translating test_2016_flickr (beam " << d.beam_size << "); budget "
            << d.minutes << " min; results in " << d.out.string() << "\n";
}

int demo(const cli::ParsedOptions& p, std::span<const char* const> args) {
  const experiment::DemoSettings d = demo_settings(p);
  experiment::ComparisonSpec spec = experiment::demo_spec(d);
  spec.command = "qkv demo " + cli::shell_quote(std::vector<std::string>(args.begin(), args.end()));
  announce(d, spec);
  return run_and_print_comparison(spec);
}

}  // namespace

int demo_main(int argc, const char* const* argv) {
  return run_subcommand(
      {"demo", demo_options, demo,
       "The main job: on Multi30k En->De (shipped in the repository), trains an RNN without "
       "attention, an RNN with attention (Bahdanau) and a Transformer within --minutes on 2 "
       "cores, translates the test set with each, prints the comparison table and writes "
       "DIR/report.html. It runs `qkv compare` with small models and a per-model time budget."},
      argc, argv);
}

}  // namespace qkv::tool
