#include "qkv/experiment/comparison_flags.h"

#include "qkv/base/error.h"
#include "qkv/cli/common_options.h"
#include "qkv/experiment/train_flags.h"

namespace qkv::experiment {

void declare_comparison_options(cli::OptionSet& o) {
  const ComparisonSpec d;
  o.add_list("test-sets", {}, "Source and reference test corpora (plain text or .gz).")
      .required()
      .metavar("FILE");
  o.add_string("variants", kDefaultVariants,
               "The systems to train, comma-separated: rnn:none (no attention), "
               "rnn:dot|scaled-dot|cosine|general (Luong), rnn:additive (Bahdanau), "
               "transformer.");
  o.add_path("out", d.out.string(),
             "Directory for the results: compare.csv, compare.json, bleu_by_length.svg, "
             "samples.json, models/<variant>/, hyps/<variant>.txt.")
      .metavar("DIR");
  o.add_switch("report", "Also write DIR/report.html (what `qkv report --compare DIR` writes).");
  o.add_string("title", d.title, "Title of the report.");
  cli::add_search_options(o, 0);  // the test set's search: no --max-length-factor
  cli::add_mini_batch_option(o);
  o.add_int("samples", d.samples,
            "Test sentences whose attention the report shows, per variant with attention.")
      .range(0, 100);
  o.add_int("max-sentences", d.max_sentences,
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
  o.add_int("bootstrap", d.bootstrap,
            "Resampled test sets for BLEU's 95% bootstrap confidence intervals (whole test set "
            "and every length bucket of at least 10 sentences); 0: none.")
      .range(0, 1000000)
      .metavar("N");
  o.add_switch("no-entropy",
               "Skip the attention entropy measurement (the model reads the test references "
               "once per attention head).");
}

cli::OptionSet comparison_options() {
  cli::OptionSet o;
  declare_train_options(o, ModelDirFlag::Optional);
  declare_comparison_options(o);
  return o;
}

ComparisonSpec comparison_spec_from(const cli::ParsedOptions& p, std::string command) {
  QKV_CHECK(!p.is_set("model"), ConfigError,
            "--model: compare writes each variant's model to --out DIR/models/<variant>; "
            "drop --model");
  for (const char* flag : {"type", "attention"})
    QKV_CHECK(!p.is_set(flag), ConfigError, "--", flag,
              ": compare sets each model's type and attention from --variants (e.g. "
              "rnn:none,rnn:additive,transformer); drop --",
              flag);
  QKV_CHECK(!p.get<bool>("resume"), ConfigError,
            "--resume: compare trains every variant anew; drop --resume");
  ComparisonSpec s;
  s.train_sets = corpus_files_from(p, "train-sets");
  if (!p.get_list("valid-sets").empty()) s.valid_sets = corpus_files_from(p, "valid-sets");
  s.test_sets = corpus_files_from(p, "test-sets");
  if (p.has("vocab")) s.vocab = p.get<std::filesystem::path>("vocab");
  s.max_sentences = p.get<int64_t>("max-sentences");
  s.variants = parse_variants(p.get<std::string>("variants"));
  s.model = model_settings_from(p);
  s.train = train_settings_from(p);
  if (!p.is_set("after")) s.train.after = kDefaultComparisonBudget;
  const cli::SearchValues search = cli::search_values(p);
  s.search = {.beam_size = search.beam_size,
              .normalize = search.normalize,
              .mini_batch = p.get<int64_t>("mini-batch")};
  s.samples = p.get<int64_t>("samples");
  s.bootstrap = p.get<int64_t>("bootstrap");
  s.entropy = !p.get<bool>("no-entropy");
  s.out = p.get<std::filesystem::path>("out");
  s.title = p.get<std::string>("title");
  s.report = p.get<bool>("report");
  s.overwrite = p.get<bool>("overwrite");
  s.reuse = p.get<bool>("reuse");
  s.command = std::move(command);
  return s;
}

}  // namespace qkv::experiment
