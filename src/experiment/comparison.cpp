#include "qkv/experiment/comparison.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "comparison_data.h"
#include "qkv/base/field_error.h"
#include "qkv/base/thread_pool.h"
#include "qkv/experiment/runner.h"
#include "qkv/experiment/samples.h"
#include "qkv/io/atomic_file.h"

namespace qkv::experiment {
namespace {

namespace fs = std::filesystem;

using Reused = std::map<std::string, VariantResult>;  // by variant name

fs::path model_dir(const ComparisonSpec& spec, const Variant& v) {
  return spec.out / "models" / v.file_name();
}

// The spec's model with the variant's type and attention (and heads, transformer:h<N>).
ModelSettings variant_model(const ComparisonSpec& spec, const Variant& v) {
  ModelSettings m = spec.model;
  m.type = v.type;
  m.attention = v.type == models::ModelType::Rnn ? std::optional(v.attention) : std::nullopt;
  if (v.heads > 0) m.heads = v.heads;
  return m;
}

VariantPlan variant_plan(const ComparisonSpec& spec, const Variant& v, const data::Vocab& vocab) {
  return {.variant = v,
          .config = model_config(variant_model(spec, v), vocab, spec.train.max_length),
          .trainer = trainer_options(spec.train, model_dir(spec, v))};
}

// The variants of an earlier comparison in spec.out that `reuse` keeps: recorded in its
// compare.json, with a model file in out/models/<variant>/.
Reused reusable_variants(const ComparisonSpec& spec) {
  Reused keep;
  const fs::path json = spec.out / kCompareJson;
  std::error_code ec;
  if (!fs::exists(json, ec)) return keep;
  const std::vector<std::byte> bytes = io::read_file(json, uint64_t{1} << 30);
  const Comparison earlier = comparison_from_json(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), json.string());
  for (const Variant& v : spec.variants)
    for (const VariantResult& r : earlier.variants)
      if (r.name == v.name && fs::exists(spec.out / r.model_dir / r.evaluated_file, ec))
        keep.emplace(v.name, r);
  return keep;
}

// The out directory's model directories: new, or replaced with `overwrite` (those `reuse`
// keeps are left alone).
void prepare_model_dirs(const ComparisonSpec& spec, const Reused& reused) {
  const fs::path& out = spec.out;
  for (const Variant& v : spec.variants) {
    if (reused.contains(v.name)) continue;
    const fs::path dir = model_dir(spec, v);
    std::error_code ec;
    if (!fs::exists(dir, ec) || fs::is_empty(dir, ec)) continue;
    QKV_CHECK(spec.overwrite, FieldError, "{out} ", out.string(), ": ", dir.string(),
              " already holds a model from an earlier comparison; pass {overwrite} to replace "
              "it, or choose another {out}");
    fs::remove_all(dir, ec);
    QKV_CHECK(!ec, IoError, "cannot remove ", dir.string(), ": ", ec.message());
  }
  std::error_code ec;
  fs::create_directories(out / "models", ec);
  QKV_CHECK(!ec, FieldIoError, "{out} ", out.string(),
            ": cannot create the directory: ", ec.message());
  fs::create_directories(out / "hyps", ec);
  QKV_CHECK(!ec, FieldIoError, "{out} ", out.string(), ": cannot create ", (out / "hyps").string(),
            ": ", ec.message());
}

// A reused model must be the one the spec describes, or the table would mix settings.
void check_reusable(const VariantPlan& plan, const VariantResult& earlier, const fs::path& out) {
  QKV_CHECK(!earlier.config.empty() && models::from_json(earlier.config) == plan.config, FieldError,
            "{reuse}: ", (out / earlier.model_dir).string(), " holds a ", plan.variant.name,
            " model with another configuration (",
            earlier.config.empty() ? std::string("none recorded") : earlier.config,
            ") than these flags give (", models::to_json(plan.config),
            "); give the flags of the earlier run, or drop {reuse} (with {overwrite}) to "
            "retrain");
}

void write_lines(const fs::path& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  io::write_file_atomically(path, std::as_bytes(std::span(text.data(), text.size())));
}

EvalSettings eval_settings(const ComparisonSpec& spec, const TestSet& test) {
  EvalSettings eval{.search = spec.search,
                    .sample_lines = pick_samples(test.sources, size_t(spec.samples)),
                    .entropy = spec.entropy};
  if (spec.bootstrap > 0) eval.bootstrap = eval::BootstrapOptions{.samples = spec.bootstrap};
  return eval;
}

// The notes of the run as the report shows them: the run, then what the columns measure.
std::vector<std::string> notes(const ComparisonSpec& spec, const ComparisonData& data,
                               const EvalSettings& eval, const Reused& reused) {
  std::vector<std::string> n = comparison_notes(spec, data);
  if (eval.bootstrap)
    n.push_back("BLEU 95% CI: percentile bootstrap over " +
                std::to_string(eval.bootstrap->samples) +
                " resampled test sets (Koehn 2004), for the whole test set and "
                "each length bucket of at least 10 sentences (the chart's whiskers).");
  if (eval.entropy)
    n.push_back(
        "attn entropy: mean entropy in nats of an attention row over the real source tokens "
        "while the model reads the test references (teacher forcing), over every decoder "
        "layer's every head for a Transformer; in brackets the entropy of uniform attention "
        "over the same rows (log of the source length).");
  if (!reused.empty()) {
    std::string names;
    for (const auto& [name, earlier] : reused) names += (names.empty() ? "" : ", ") + name;
    n.push_back("Reused (--reuse): " + names +
                " trained by an earlier run in this directory; their training "
                "columns are that run's, peak RSS is this evaluation's.");
  }
  return n;
}

// Heatmaps by test sentence, then variant: the report shows a sentence's variants together.
class SampleMaps {
 public:
  void add(size_t variant, VariantOutcome& o) {
    for (size_t k = 0; k < o.samples.size(); ++k)
      samples_.emplace_back(o.sample_lines[k], variant, std::move(o.samples[k]));
    std::sort(samples_.begin(), samples_.end(), [](const auto& a, const auto& b) {
      return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
    });
  }
  std::vector<viz::AttentionMap> maps() const {
    std::vector<viz::AttentionMap> out;
    for (const auto& s : samples_) out.push_back(std::get<2>(s));
    return out;
  }

 private:
  std::vector<std::tuple<size_t, size_t, viz::AttentionMap>> samples_;
};

}  // namespace

void check(const ComparisonSpec& spec) {
  QKV_CHECK(!spec.variants.empty(), FieldError,
            "{variants}: no variants; write e.g. rnn:none,rnn:additive,transformer");
  QKV_CHECK(!spec.train_sets.source.empty() && !spec.train_sets.target.empty(), FieldError,
            "{train_sets}: give the source and the target training corpus");
  QKV_CHECK(!spec.test_sets.source.empty() && !spec.test_sets.target.empty(), FieldError,
            "{test_sets}: give the source and the reference test corpus");
  QKV_CHECK(!spec.out.empty(), FieldError, "{out}: give the directory for the results");
  QKV_CHECK(spec.max_sentences >= 0, FieldError, "{max_sentences} ", spec.max_sentences,
            " must be >= 0 (0: all)");
  QKV_CHECK(spec.samples >= 0, FieldError, "{samples} ", spec.samples, " must be >= 0");
  QKV_CHECK(spec.bootstrap >= 0, FieldError, "{bootstrap} ", spec.bootstrap,
            " must be >= 0 (0: none)");
  QKV_CHECK(spec.search.beam_size >= 1, FieldError, "{beam_size} ", spec.search.beam_size,
            " must be >= 1 (1: greedy search)");
  QKV_CHECK(spec.search.mini_batch >= 1, FieldError, "{mini_batch} ", spec.search.mini_batch,
            " must be >= 1");
  QKV_CHECK(spec.train.vocab_size >= 5 || spec.vocab, FieldError, "{vocab_size} ",
            spec.train.vocab_size, " must be >= 5 (<pad>, <unk>, <s>, </s> and a piece)");
  for (const Variant& v : spec.variants) {
    model_config(variant_model(spec, v), std::max<int64_t>(spec.train.vocab_size, 5),
                 spec.train.max_length);
    trainer_options(spec.train, model_dir(spec, v));
  }
}

Comparison run_comparison(const ComparisonSpec& spec, std::ostream* log) {
  check(spec);
  if (spec.train.threads > 0) set_num_threads(int(spec.train.threads));
  std::ostream silent(nullptr);
  std::ostream& out = log != nullptr ? *log : silent;
  const Reused reused = spec.reuse ? reusable_variants(spec) : Reused{};
  prepare_model_dirs(spec, reused);

  ComparisonData data = load_comparison_data(spec, out);
  const EvalSettings eval = eval_settings(spec, data.test);
  // Every reused model is checked against the spec before anything is trained.
  for (const Variant& v : spec.variants)
    if (const auto it = reused.find(v.name); it != reused.end())
      check_reusable(variant_plan(spec, v, data.training.vocab), it->second, spec.out);
  Comparison comparison{.title = spec.title, .notes = notes(spec, data, eval, reused)};
  SampleMaps samples;
  const size_t n = spec.variants.size();
  for (size_t i = 0; i < n; ++i) {
    const Variant& v = spec.variants[i];
    VariantPlan plan = variant_plan(spec, v, data.training.vocab);
    plan.label = "[" + std::to_string(i + 1) + "/" + std::to_string(n) + " " + v.name + "]";
    plan.trainer.log = log;
    VariantOutcome o;
    if (const auto it = reused.find(v.name); it != reused.end()) {
      out << plan.label << " reusing " << (spec.out / it->second.model_dir).string()
          << " (--reuse): " << it->second.updates << " updates from the earlier run\n";
      o = evaluate_variant(plan, it->second, data.training.vocab, data.test, eval, log);
    } else {
      out << plan.label << " training under --after " << spec.train.after << "\n";
      o = run_variant(plan, data.training, data.test, eval, log);
    }
    o.result.model_dir = (fs::path("models") / v.file_name()).string();
    write_lines(spec.out / "hyps" / (v.file_name() + ".txt"), o.hypotheses);
    comparison.variants.push_back(std::move(o.result));
    samples.add(i, o);
    // After every variant, so an interrupted comparison keeps what it finished; with
    // reuse the earlier results of the variants still to come stay in the file too, so
    // that an interruption never loses a model's training record (a later reuse would
    // otherwise have to retrain it).
    Comparison snapshot = comparison;
    for (size_t j = i + 1; j < n; ++j)
      if (const auto it = reused.find(spec.variants[j].name); it != reused.end())
        snapshot.variants.push_back(it->second);
    write_results(spec.out, snapshot, samples.maps());
  }
  if (spec.report) write_report(spec.out, spec.out / kReportHtml);
  return comparison;
}

}  // namespace qkv::experiment
