// qkv compare: several systems trained on the same data, with the same vocabulary, seed
// and budget, then translated, scored and measured on one test set: one table on stdout,
// and DIR/compare.{csv,json}, DIR/bleu_by_length.svg, DIR/samples.json, DIR/models/<v>/,
// DIR/hyps/<v>.txt (and DIR/report.html with --report).
//
// The flags are compare's own plus every `qkv train` flag, which applies to each variant
// alike (experiment/comparison_flags.h); the work is experiment::run_comparison.
#include <iostream>

#include "command.h"
#include "qkv/cli/field_names.h"
#include "qkv/experiment/comparison_flags.h"
#include "qkv/experiment/finding.h"

namespace qkv::tool {
namespace {

std::string help_text() {
  cli::OptionSet own;
  experiment::declare_comparison_options(own);
  return own.format_help(
             "qkv", "compare",
             "Trains each variant on the same data with the same vocabulary, seed and budget "
             "(--after, default " +
                 std::string(experiment::kDefaultComparisonBudget) +
                 " per variant), translates the test set with each, and prints one table: "
                 "BLEU with its 95% bootstrap interval, chrF, BLEU per source-length bucket, "
                 "attention entropy, training tokens/s, decoding sentences/s, parameters, "
                 "peak memory, wall time.") +
         "\nEvery `qkv train` flag is accepted too and applies to each variant alike "
         "(--train-sets is required; --valid-sets, --after, --dim-emb, --seed, --threads, "
         "...; see `qkv train --help`), except --model, --type, --attention and --resume.\n";
}

}  // namespace

int run_and_print_comparison(const experiment::ComparisonSpec& spec) {
  const experiment::Comparison comparison = experiment::run_comparison(spec, &std::cerr);
  std::cout << experiment::format_table(experiment::summary_table(comparison));
  if (const std::string found = experiment::finding(comparison); !found.empty())
    std::cout << "\nfinding: " << found << "\n";
  std::cout << std::flush;
  std::cerr << "[compare] wrote " << (spec.out / experiment::kCompareCsv).string() << ", "
            << experiment::kCompareJson << ", " << experiment::kChartSvg << ", "
            << experiment::kSamplesJson << ", models/, hyps/";
  if (spec.report) std::cerr << ", " << experiment::kReportHtml;
  std::cerr << "\n";
  return kExitOk;
}

int compare_main(int argc, const char* const* argv) {
  return run_guarded("compare", [&] {
    const cli::ParsedOptions p = experiment::comparison_options().parse(argc, argv);
    if (p.help_requested()) {
      std::cout << help_text();
      return kExitOk;
    }
    const std::vector<std::string> args(argv + 1, argv + argc);
    return run_and_print_comparison(
        experiment::comparison_spec_from(p, "qkv compare " + cli::shell_quote(args)));
  });
}

}  // namespace qkv::tool
