// qkv gradflow: the norm of the loss gradient with respect to each source position's
// encoder state, by position, for one or more models (experiment/gradient_flow.h): does
// the training signal reach the early words? A table on stdout, optionally CSV and SVG.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "command.h"
#include "decode_support.h"
#include "experiment_commands.h"
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

// "rnn:additive", "transformer", with " (init)" at initialisation.
std::string model_name(const models::ModelConfig& c, bool init) {
  std::string name = c.type == models::ModelType::Rnn
                         ? "rnn:" + std::string(models::to_string(c.attention))
                         : std::string("transformer");
  return init ? name + " (init)" : name;
}

// The pairs this model measures: tokenised with its vocabulary, within the lengths.
data::TokenizedCorpus usable_pairs(const data::ParallelCorpus& corpus, const decode::Translator& tr,
                                   const cli::ParsedOptions& p, int64_t& skipped) {
  const data::TokenizedCorpus all = data::tokenize(corpus, tr.vocab());
  const int64_t max_len = max_source_tokens(tr.model().config(), p.get<int64_t>("max-length"));
  const int64_t min_len = p.get<int64_t>("min-length");
  const auto limit = size_t(p.get<int64_t>("max-sentences"));
  data::TokenizedCorpus kept;
  skipped = int64_t(corpus.source.size() - all.source.size());  // empty after encoding
  for (size_t i = 0; i < all.source.size() && kept.source.size() < limit; ++i) {
    const auto s = int64_t(all.source[i].size()), t = int64_t(all.target[i].size());
    if (s < min_len || s > max_len || t > max_len) {
      ++skipped;
      continue;
    }
    kept.source.push_back(all.source[i]);
    kept.target.push_back(all.target[i]);
    kept.line_numbers.push_back(all.line_numbers[i]);
  }
  return kept;
}

experiment::GradientSeries measure(const std::string& path, const data::ParallelCorpus& corpus,
                                   const cli::ParsedOptions& p, experiment::GradientSite site) {
  const decode::Translator tr = load_translator(path);
  const bool init = p.get<bool>("init");
  // --init measures a freshly initialised model of the same config instead.
  std::unique_ptr<models::Seq2Seq> fresh;
  if (init) fresh = models::make_model(tr.model().config(), uint64_t(p.get<int64_t>("seed")));
  models::Seq2Seq& model = init ? *fresh : tr.model();
  int64_t skipped = 0;
  const data::TokenizedCorpus pairs = usable_pairs(corpus, tr, p, skipped);
  QKV_CHECK(!pairs.source.empty(), ValueError, "--model ", path, ": no pair of --src ",
            p.get<fs::path>("src").string(), " / --ref ", p.get<fs::path>("ref").string(),
            " is within --min-length/--max-length (", skipped, " skipped)");
  const auto start = std::chrono::steady_clock::now();
  const auto norms = experiment::gradient_norms(model, pairs, site, p.get<int64_t>("mini-batch"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  experiment::GradientSeries s{model_name(model.config(), init),
                               experiment::profile_by_position(norms)};
  std::cerr << "gradflow: " << path << " (" << s.name
            << "): " << count_of(int64_t(pairs.source.size()), "sentence") << ", " << skipped
            << " skipped, " << fixed(seconds, 1) << " s\n";
  return s;
}

std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// position | sentences | one column per model (when the models' vocabularies cut the
// sentences differently, each model gets its own sentences column).
viz::ReportTable position_table(const std::vector<experiment::GradientSeries>& series) {
  bool same = true;
  size_t positions = 0;
  for (const auto& s : series) {
    same = same && s.profile.sentences == series[0].profile.sentences;
    positions = std::max(positions, s.profile.mean_norm.size());
  }
  viz::ReportTable t;
  t.columns.push_back("position");
  if (same) t.columns.push_back("sentences");
  for (const auto& s : series) {
    if (!same) t.columns.push_back("n " + s.name);
    t.columns.push_back(s.name);
  }
  for (size_t j = 0; j < positions; ++j) {
    std::vector<std::string> row{std::to_string(j + 1)};
    if (same) row.push_back(std::to_string(series[0].profile.sentences[j]));
    for (const auto& s : series) {
      const bool has = j < s.profile.mean_norm.size();
      if (!same) row.push_back(has ? std::to_string(s.profile.sentences[j]) : "0");
      row.push_back(has ? short_number(s.profile.mean_norm[j]) : "-");
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

void write_text(const fs::path& path, const std::string& text) {
  io::write_file_atomically(path, std::as_bytes(std::span(text.data(), text.size())));
}

int gradflow(const cli::ParsedOptions& p) {
  cli::apply_threads_option(p);
  QKV_CHECK(p.get<int64_t>("min-length") <= p.get<int64_t>("max-length"), ConfigError,
            "--min-length ", p.get<int64_t>("min-length"), " exceeds --max-length ",
            p.get<int64_t>("max-length"));
  const experiment::GradientSite site = experiment::parse_gradient_site(p.get<std::string>("site"));
  const data::ParallelCorpus corpus =
      data::read_parallel_corpus(p.get<fs::path>("src"), p.get<fs::path>("ref"));
  std::vector<experiment::GradientSeries> series;
  for (const std::string& path : p.get_list("model")) {
    series.push_back(measure(path, corpus, p, site));
    for (size_t i = 0; i + 1 < series.size(); ++i)
      if (series[i].name == series.back().name) series.back().name += " [" + path + "]";
  }
  std::cout << "mean ||dL/d" << (site == experiment::GradientSite::EncoderInput ? "x_j" : "h_j")
            << "|| by source position (site " << to_string(site)
            << "; L = mean target-token cross-entropy per sentence)\n"
            << experiment::format_table(position_table(series));
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
  return run_guarded("gradflow", [&] {
    const cli::OptionSet options = gradflow_options();
    const cli::ParsedOptions p = options.parse(argc, argv);
    if (p.help_requested()) {
      std::cout << options.format_help(
          "qkv", "gradflow",
          "For each model, runs the training forward and backward on the first "
          "--max-sentences pairs of --src/--ref (evaluation mode, no dropout) and prints, per "
          "source position (subword tokens, the source EOS last), the mean over the sentences "
          "that reach it of the norm of the loss gradient with respect to that position's "
          "encoder input (--site input) or output (--site output). Compare rnn:none with "
          "rnn:additive: without attention the gradient has to cross the recurrence to reach "
          "the early words.");
      return kExitOk;
    }
    return gradflow(p);
  });
}

}  // namespace qkv::tool
