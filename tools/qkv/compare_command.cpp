// qkv compare: several systems trained on the same data, with the same vocabulary, seed
// and budget, then translated, scored and measured on one test set: one table on stdout,
// and DIR/compare.{csv,json}, DIR/bleu_by_length.svg, DIR/samples.json, DIR/models/<v>/,
// DIR/hyps/<v>.txt (and DIR/report.html with --report).
//
// The flags are compare's own (below) plus every `qkv train` flag, which applies to each
// variant alike; --variants sets each one's --type and --attention.
#include <algorithm>
#include <iostream>
#include <map>
#include <tuple>

#include "command.h"
#include "compare_support.h"
#include "experiment_commands.h"
#include "qkv/base/thread_pool.h"
#include "qkv/experiment/finding.h"
#include "qkv/experiment/results.h"
#include "qkv/experiment/runner.h"
#include "qkv/experiment/samples.h"
#include "qkv/experiment/train_flags.h"
#include "qkv/io/atomic_file.h"
#include "qkv/models/config.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;
using experiment::Variant;

constexpr const char* kDefaultVariants = "rnn:none,rnn:dot,rnn:additive,transformer";
constexpr const char* kDefaultBudget = "5m";

cli::OptionSet compare_options() {
  cli::OptionSet o;
  o.add_list("test-sets", {}, "Source and reference test corpora (plain text or .gz).")
      .required()
      .metavar("FILE");
  o.add_string("variants", kDefaultVariants,
               "The systems to train, comma-separated: rnn:none (no attention), "
               "rnn:dot|scaled-dot|cosine|general (Luong), rnn:additive (Bahdanau), "
               "transformer.");
  o.add_path("out", "compare",
             "Directory for the results: compare.csv, compare.json, bleu_by_length.svg, "
             "samples.json, models/<variant>/, hyps/<variant>.txt.")
      .metavar("DIR");
  o.add_switch("report", "Also write DIR/report.html (what `qkv report --compare DIR` writes).");
  o.add_string("title", "qkv comparison", "Title of the report.");
  o.add_int("beam-size", 5, "Beam size for the test set (1: greedy search).").range(1, 1000);
  o.add_double("normalize", 0.6, "Length normalisation α of beam search.").range(0, 10);
  o.add_int("mini-batch", 32, "Test sentences decoded together.").range(1, 100000);
  o.add_int("samples", 3,
            "Test sentences whose attention the report shows, per variant with attention.")
      .range(0, 100);
  o.add_int("max-sentences", 0,
            "Use only the first N pairs of the training, validation and test sets (0: all): "
            "for quick trials and smoke tests.")
      .range(0, 1e12);
  o.add_switch("overwrite",
               "Replace the model directories an earlier comparison left in DIR/models.");
  o.add_switch("reuse",
               "Keep the models an earlier `qkv compare --out DIR` finished: a variant whose "
               "model is in DIR/models/ and whose training is in DIR/compare.json is "
               "translated and scored again (e.g. with another --beam-size or --bootstrap), not "
               "retrained; the others are trained. Give the same data and model flags (a "
               "different model configuration is an error); DIR/vocab.spm is reused too.");
  o.add_int("bootstrap", 1000,
            "Resampled test sets for BLEU's 95% bootstrap confidence intervals (whole test set "
            "and every length bucket of at least 10 sentences); 0: none.")
      .range(0, 1000000)
      .metavar("N");
  o.add_switch("no-entropy",
               "Skip the attention entropy measurement (the model reads the test references "
               "once per attention head).");
  return o;
}

std::string help_text(const cli::OptionSet& own) {
  return own.format_help(
             "qkv", "compare",
             "Trains each variant on the same data with the same vocabulary, seed and budget "
             "(--after, default " +
                 std::string(kDefaultBudget) +
                 " per variant), translates the test set with each, and prints one table: "
                 "BLEU with its 95% bootstrap interval, chrF, BLEU per source-length bucket, "
                 "attention entropy, training tokens/s, decoding sentences/s, parameters, "
                 "peak memory, wall time.") +
         "\nEvery `qkv train` flag is accepted too and applies to each variant alike "
         "(--train-sets is required; --valid-sets, --after, --dim-emb, --seed, --threads, "
         "...; see `qkv train --help`), except --model, --type, --attention and --resume.\n";
}

// The variants of an earlier comparison in `out` that --reuse keeps: recorded in its
// compare.json, with a model file in out/models/<variant>/.
std::map<std::string, experiment::VariantResult> reusable_variants(
    const fs::path& out, const std::vector<Variant>& variants) {
  std::map<std::string, experiment::VariantResult> keep;
  const fs::path json = out / experiment::kCompareJson;
  std::error_code ec;
  if (!fs::exists(json, ec)) return keep;
  const std::vector<std::byte> bytes = io::read_file(json, uint64_t{1} << 30);
  const experiment::Comparison earlier = experiment::comparison_from_json(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), json.string());
  for (const Variant& v : variants)
    for (const experiment::VariantResult& r : earlier.variants)
      if (r.name == v.name && fs::exists(out / r.model_dir / r.evaluated_file, ec))
        keep.emplace(v.name, r);
  return keep;
}

// The --out directory's model directories: new, or replaced with --overwrite (those
// --reuse keeps are left alone).
void prepare_model_dirs(const fs::path& out, const std::vector<Variant>& variants, bool overwrite,
                        const std::map<std::string, experiment::VariantResult>& reused) {
  for (const Variant& v : variants) {
    if (reused.contains(v.name)) continue;
    const fs::path dir = out / "models" / v.file_name();
    std::error_code ec;
    if (!fs::exists(dir, ec) || fs::is_empty(dir, ec)) continue;
    QKV_CHECK(overwrite, ConfigError, "--out ", out.string(), ": ", dir.string(),
              " already holds a model from an earlier comparison; pass --overwrite to replace "
              "it, or choose another --out");
    fs::remove_all(dir, ec);
    QKV_CHECK(!ec, IoError, "cannot remove ", dir.string(), ": ", ec.message());
  }
  std::error_code ec;
  fs::create_directories(out / "models", ec);
  QKV_CHECK(!ec, IoError, "--out ", out.string(), ": cannot create the directory: ", ec.message());
  fs::create_directories(out / "hyps", ec);
  QKV_CHECK(!ec, IoError, "--out ", out.string(), ": cannot create ", (out / "hyps").string(), ": ",
            ec.message());
}

void write_lines(const fs::path& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  io::write_file_atomically(path, std::as_bytes(std::span(text.data(), text.size())));
}

struct Run {
  const cli::ParsedOptions& own;
  CompareSetup setup;
  std::vector<Variant> variants;
  fs::path out;
  std::map<std::string, experiment::VariantResult> reused;  // --reuse: by variant name
};

// A reused model must be the one these flags describe, or the table would mix settings.
void check_reusable(const experiment::VariantPlan& plan, const experiment::VariantResult& earlier,
                    const fs::path& out) {
  QKV_CHECK(!earlier.config.empty() && models::from_json(earlier.config) == plan.config,
            ConfigError, "--reuse: ", (out / earlier.model_dir).string(), " holds a ",
            plan.variant.name, " model with another configuration (",
            earlier.config.empty() ? std::string("none recorded") : earlier.config,
            ") than these flags give (", models::to_json(plan.config),
            "); give the flags of the earlier run, or drop --reuse (with --overwrite) to retrain");
}

int run(Run& r) {
  const cli::ParsedOptions& p = r.own;
  CompareData data = load_compare_data(r.setup, r.out, p.get<int64_t>("max-sentences"), std::cerr,
                                       p.get<bool>("reuse"));
  experiment::EvalSettings eval{.search = {.beam_size = p.get<int64_t>("beam-size"),
                                           .normalize = p.get<double>("normalize"),
                                           .mini_batch = p.get<int64_t>("mini-batch")},
                                .sample_lines = experiment::pick_samples(
                                    data.test.sources, size_t(p.get<int64_t>("samples"))),
                                .entropy = !p.get<bool>("no-entropy")};
  // Every reused model is checked against the flags before anything is trained.
  for (const Variant& v : r.variants)
    if (const auto it = r.reused.find(v.name); it != r.reused.end())
      check_reusable(variant_plan(r.setup, v, data.training.vocab, r.out), it->second, r.out);
  if (p.get<int64_t>("bootstrap") > 0)
    eval.bootstrap = eval::BootstrapOptions{.samples = p.get<int64_t>("bootstrap")};
  experiment::Comparison comparison{.title = p.get<std::string>("title"),
                                    .notes = comparison_notes(r.setup, data, eval.search)};
  if (eval.bootstrap)
    comparison.notes.push_back(
        "BLEU 95% CI: percentile bootstrap over " + std::to_string(eval.bootstrap->samples) +
        " resampled test sets (Koehn 2004), for the whole test set and "
        "each length bucket of at least 10 sentences (the chart's whiskers).");
  if (eval.entropy)
    comparison.notes.push_back(
        "attn entropy: mean entropy in nats of an attention row over the real source tokens "
        "while the model reads the test references (teacher forcing), over every decoder "
        "layer's every head for a Transformer; in brackets the entropy of uniform attention "
        "over the same rows (log of the source length).");
  if (!r.reused.empty()) {
    std::string names;
    for (const auto& [name, earlier] : r.reused) names += (names.empty() ? "" : ", ") + name;
    comparison.notes.push_back("Reused (--reuse): " + names +
                               " trained by an earlier run in this directory; their training "
                               "columns are that run's, peak RSS is this evaluation's.");
  }
  // Heatmaps by test sentence, then variant: the report shows a sentence's variants together.
  std::vector<std::tuple<size_t, size_t, viz::AttentionMap>> samples;
  const size_t n = r.variants.size();
  for (size_t i = 0; i < n; ++i) {
    const Variant& v = r.variants[i];
    experiment::VariantPlan plan = variant_plan(r.setup, v, data.training.vocab, r.out);
    plan.label = "[" + std::to_string(i + 1) + "/" + std::to_string(n) + " " + v.name + "]";
    plan.trainer.log = &std::cerr;
    experiment::VariantOutcome o;
    if (const auto it = r.reused.find(v.name); it != r.reused.end()) {
      std::cerr << plan.label << " reusing " << (r.out / it->second.model_dir).string()
                << " (--reuse): " << it->second.updates << " updates from the earlier run\n";
      o = experiment::evaluate_variant(plan, it->second, data.training.vocab, data.test, eval,
                                       &std::cerr);
    } else {
      std::cerr << plan.label << " training under --after " << r.setup.budget << "\n";
      o = experiment::run_variant(plan, data.training, data.test, eval, &std::cerr);
    }
    o.result.model_dir = (fs::path("models") / v.file_name()).string();
    write_lines(r.out / "hyps" / (v.file_name() + ".txt"), o.hypotheses);
    comparison.variants.push_back(std::move(o.result));
    for (size_t k = 0; k < o.samples.size(); ++k)
      samples.emplace_back(o.sample_lines[k], i, std::move(o.samples[k]));
    std::sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) {
      return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
    });
    std::vector<viz::AttentionMap> maps;
    for (const auto& s : samples) maps.push_back(std::get<2>(s));
    // After every variant, so an interrupted comparison keeps what it finished; with
    // --reuse the earlier results of the variants still to come stay in the file too,
    // so that an interruption never loses a model's training record (a later --reuse
    // would otherwise have to retrain it).
    experiment::Comparison snapshot = comparison;
    for (size_t j = i + 1; j < n; ++j)
      if (const auto it = r.reused.find(r.variants[j].name); it != r.reused.end())
        snapshot.variants.push_back(it->second);
    experiment::write_results(r.out, snapshot, maps);
  }
  std::cout << experiment::format_table(experiment::summary_table(comparison));
  if (const std::string found = experiment::finding(comparison); !found.empty())
    std::cout << "\nfinding: " << found << "\n";
  std::cout << std::flush;
  std::cerr << "[compare] wrote " << (r.out / experiment::kCompareCsv).string() << ", "
            << experiment::kCompareJson << ", " << experiment::kChartSvg << ", "
            << experiment::kSamplesJson << ", models/, hyps/";
  if (p.get<bool>("report")) {
    experiment::write_report(r.out, r.out / experiment::kReportHtml);
    std::cerr << ", " << experiment::kReportHtml;
  }
  std::cerr << "\n";
  return kExitOk;
}

}  // namespace

int run_compare(const std::vector<std::string>& args) {
  const cli::OptionSet own = compare_options();
  const SplitArgs split = split_args(own, args);
  const cli::ParsedOptions p = own.parse(split.own);
  if (p.help_requested()) {
    std::cout << help_text(own);
    return kExitOk;
  }
  Run r{.own = p,
        .setup = compare_setup(split.train, p.get<fs::path>("out"), kDefaultBudget,
                               p.get_list("test-sets")),
        .variants = experiment::parse_variants(p.get<std::string>("variants")),
        .out = p.get<fs::path>("out")};
  r.setup.command = "qkv compare " + quote_args(args);
  // Every variant's flags are checked before any work (a vocabulary takes minutes).
  for (const Variant& v : r.variants) check_variant_flags(r.setup, v, r.out);
  if (p.get<bool>("reuse")) r.reused = reusable_variants(r.out, r.variants);
  prepare_model_dirs(r.out, r.variants, p.get<bool>("overwrite"), r.reused);
  return run(r);
}

int compare_main(int argc, const char* const* argv) {
  return run_guarded("compare", [&] {
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
    return run_compare(args);
  });
}

}  // namespace qkv::tool
