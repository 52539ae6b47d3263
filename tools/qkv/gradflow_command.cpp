// qkv gradflow: the norm of the loss gradient with respect to each source position's
// encoder state, by position, for one or more models (experiment/gradient_flow.h): does
// the training signal reach the early words? A table on stdout, optionally CSV and SVG.
#include <iostream>

#include "command.h"
#include "decode_support.h"
#include "qkv/base/format.h"
#include "qkv/base/plural.h"
#include "qkv/cli/common_options.h"
#include "qkv/cli/options.h"
#include "qkv/data/parallel_corpus.h"
#include "qkv/experiment/gradient_flow.h"
#include "qkv/experiment/results.h"
#include "qkv/experiment/settings.h"
#include "qkv/io/atomic_file.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

cli::OptionSet gradflow_options() {
  cli::OptionSet o;
  o.add_list("model", {},
             "Model directories written by `qkv train` (or model files); one line per model in "
             "the table and the chart.")
      .alias('m')
      .required()
      .metavar("DIR");
  o.add_path("src", std::nullopt, "Source sentences, one per line (plain text or .gz).")
      .required()
      .metavar("FILE");
  o.add_path("ref", std::nullopt, "Their reference translations, line by line: the loss's targets.")
      .required()
      .metavar("FILE");
  o.add_int("max-sentences", 500, "Measure the first N usable pairs.").range(1, 1e9);
  o.add_enum("site", {"input", "output"}, "input",
             "Where the gradient is taken: input = what the encoder reads at each position "
             "(the embedding; every path from the word, recurrence included), output = the "
             "encoder's output as the decoder reads it (attention, rnn bridge).");
  o.add_switch("init",
               "Measure each model at initialisation: fresh weights built from its config with "
               "--seed (qkv train's default seed gives the weights its training started from).");
  o.add_int("seed", 1111, "Seed of the fresh weights with --init.").range(0, 9.0e18);
  o.add_int("min-length", 1, "Skip pairs whose source has fewer subword tokens.").range(1, 1e7);
  // A training pair's limit, as `qkv train --max-length` (not the decoding commands' 1000).
  o.add_int("max-length", experiment::TrainSettings{}.max_length,
            "Skip pairs with more subword tokens on a side.")
      .range(1, 1e7);
  o.add_int("mini-batch", 16, "Sentences per forward/backward pass.").range(1, 100000);
  o.add_path("csv", std::nullopt, "Write model,position,sentences,mean_grad_norm rows here.")
      .metavar("FILE");
  o.add_path("svg", std::nullopt, "Write a line chart of the norms by position here.")
      .metavar("FILE");
  cli::add_threads_option(o);
  return o;
}

// --model's files measured one by one; the table's column names made unique.
std::vector<experiment::GradientSeries> measure_all(const cli::ParsedOptions& p) {
  const experiment::GradientFlowOptions o{
      .site = experiment::parse_gradient_site(p.get<std::string>("site")),
      .init = p.get<bool>("init"),
      .seed = uint64_t(p.get<int64_t>("seed")),
      .min_length = p.get<int64_t>("min-length"),
      .max_length = p.get<int64_t>("max-length"),
      .max_sentences = p.get<int64_t>("max-sentences"),
      .mini_batch = p.get<int64_t>("mini-batch")};
  const data::ParallelCorpus corpus =
      data::read_parallel_corpus(p.get<fs::path>("src"), p.get<fs::path>("ref"));
  std::vector<experiment::GradientSeries> series;
  for (const std::string& path : p.get_list("model")) {
    experiment::GradientFlowRun run =
        experiment::measure_gradient_flow(checked_model_path(path), corpus, o);
    std::cerr << "gradflow: " << path << " (" << run.series.name
              << "): " << count_of(run.sentences, "sentence") << ", " << run.skipped << " skipped, "
              << format_fixed(run.seconds, 1) << " s\n";
    series.push_back(std::move(run.series));
    for (size_t i = 0; i + 1 < series.size(); ++i)
      if (series[i].name == series.back().name) series.back().name += " [" + path + "]";
  }
  return series;
}

void write_text(const fs::path& path, const std::string& text) {
  io::write_file_atomically(path, std::as_bytes(std::span(text.data(), text.size())));
}

int gradflow(const cli::ParsedOptions& p, std::span<const char* const> /*args*/) {
  cli::apply_threads_option(p);
  const experiment::GradientSite site = experiment::parse_gradient_site(p.get<std::string>("site"));
  const std::vector<experiment::GradientSeries> series = measure_all(p);
  std::cout << "mean ||dL/d" << (site == experiment::GradientSite::EncoderInput ? "x_j" : "h_j")
            << "|| by source position (site " << to_string(site)
            << "; L = mean target-token cross-entropy per sentence)\n"
            << experiment::format_table(experiment::gradient_table(series));
  std::cout.flush();
  QKV_CHECK(std::cout.good(), IoError, "writing the table (stdout) failed");
  if (p.has("csv")) write_text(p.get<fs::path>("csv"), experiment::gradient_csv(series));
  if (p.has("svg"))
    write_text(p.get<fs::path>("svg"), viz::render_chart(experiment::gradient_chart(
                                           series, "Gradient norm by source position (" +
                                                       std::string(to_string(site)) + ")")));
  return kExitOk;
}

}  // namespace

int gradflow_main(int argc, const char* const* argv) {
  return run_subcommand(
      {"gradflow", gradflow_options, gradflow,
       "For each model, runs the training forward and backward on the first "
       "--max-sentences pairs of --src/--ref (evaluation mode, no dropout) and prints, per "
       "source position (subword tokens, the source EOS last), the mean over the sentences "
       "that reach it of the norm of the loss gradient with respect to that position's "
       "encoder input (--site input) or output (--site output). Compare rnn:none with "
       "rnn:additive: without attention the gradient has to cross the recurrence to reach "
       "the early words."},
      argc, argv);
}

}  // namespace qkv::tool
