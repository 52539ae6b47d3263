// qkv report: the comparison in DIR (from `qkv compare --out DIR`) as one self-contained
// HTML page: the table, the BLEU-by-length chart and attention heatmaps with hover.
#include <iostream>

#include "command.h"
#include "qkv/cli/options.h"
#include "qkv/experiment/results.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

cli::OptionSet report_options() {
  cli::OptionSet o;
  o.add_path("compare", std::nullopt,
             "Directory of a comparison (`qkv compare --out DIR`): its compare.json and "
             "samples.json are read.")
      .required()
      .metavar("DIR");
  o.add_path("output", std::nullopt, "The HTML file to write (default: DIR/report.html).")
      .alias('o')
      .metavar("FILE");
  return o;
}

int report(const cli::ParsedOptions& p, std::span<const char* const> /*args*/) {
  const fs::path dir = p.get<fs::path>("compare");
  const fs::path out = p.has("output") ? p.get<fs::path>("output") : dir / experiment::kReportHtml;
  experiment::write_report(dir, out);
  std::cerr << "wrote " << out.string() << "\n";
  return kExitOk;
}

}  // namespace

int report_main(int argc, const char* const* argv) {
  return run_subcommand(
      {"report", report_options, report,
       "Writes one self-contained HTML page (inline CSS, JS and SVG; opens offline) from a "
       "comparison: the table, BLEU by source length, and attention heatmaps of sample test "
       "sentences (hover a target word to shade its source words)."},
      argc, argv);
}

}  // namespace qkv::tool
