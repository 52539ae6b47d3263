#include "qkv/experiment/train_flags.h"

#include <algorithm>
#include <limits>

#include "qkv/base/error.h"
#include "qkv/cli/budget.h"
#include "qkv/cli/common_options.h"
#include "qkv/cli/field_names.h"

namespace qkv::experiment {
namespace {

using cli::Option;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Flags that shape the model; with --resume the model comes from the directory instead.
constexpr const char* kModelFlags[] = {"type",    "attention", "cell",      "input-feeding",
                                       "dim-emb", "dim-rnn",   "enc-depth", "dec-depth",
                                       "heads",   "dim-ffn",   "dropout"};

std::string name_of(auto value) {
  return std::string(to_string(value));
}

void declare_data(cli::OptionSet& o, ModelDirFlag model_dir) {
  const TrainSettings d;
  Option& model = o.add_path("model", std::nullopt,
                             "Model directory: model.safetensors, model.best.safetensors, "
                             "vocab.spm, train_state.safetensors and validations.tsv are "
                             "written there.")
                      .metavar("DIR");
  if (model_dir == ModelDirFlag::Required) model.required();
  o.add_list("train-sets", {}, "Source and target training corpora (plain text or .gz).")
      .required()
      .metavar("FILE");
  o.add_path("vocab", std::nullopt,
             "SentencePiece model to use (from `qkv vocab`); without it one is trained on the "
             "training corpora into DIR/vocab.spm.")
      .metavar("FILE");
  o.add_int("vocab-size", d.vocab_size,
            "Pieces of the vocabulary trained when --vocab is not given.")
      .range(5, 1000000);
  o.add_list("valid-sets", {}, "Source and target validation corpora (none: no validation).")
      .metavar("FILE");
  o.add_switch("skip-invalid",
               "Skip (and count) line pairs with invalid UTF-8 instead of stopping.");
  o.add_int("max-length", d.max_length,
            "Skip (and count) training pairs longer than this many tokens.")
      .range(1, 100000);
  o.add_int("mini-batch-words", d.mini_batch_words,
            "Token budget of a batch, padding included, per side.")
      .range(2, 1e9);
}

void declare_model(cli::OptionSet& o) {
  const ModelSettings d;
  o.add_enum("type", {"transformer", "rnn"}, name_of(d.type), "Model type.");
  o.add_enum("attention", {"none", "dot", "scaled-dot", "cosine", "general", "additive"},
             std::nullopt,
             "rnn attention: none (the bottleneck baseline), Luong dot|scaled-dot|cosine|general, "
             "or Bahdanau additive (default: additive for rnn; the transformer always uses "
             "scaled-dot).");
  o.add_enum("cell", {"gru", "lstm"}, name_of(d.cell), "rnn cell.");
  o.add_switch("input-feeding", "rnn with Luong attention: feed h~(t-1) into the next step.");
  o.add_int("dim-emb", d.dim_emb, "Embedding size (the transformer's model size).").range(1, 65536);
  o.add_int("dim-rnn", d.dim_rnn, "rnn hidden size per direction.").range(1, 65536);
  o.add_int("enc-depth", std::nullopt, "Encoder layers (default: 3 transformer, 1 rnn).")
      .range(1, 64);
  o.add_int("dec-depth", std::nullopt, "Decoder layers (default: 3 transformer, 1 rnn).")
      .range(1, 64);
  o.add_int("heads", d.heads, "transformer attention heads (must divide --dim-emb).")
      .range(1, 1024);
  o.add_int("dim-ffn", d.dim_ffn, "transformer feed-forward size.").range(1, 1000000);
  o.add_double("dropout", d.dropout, "Dropout probability.").range(0, 0.99);
}

void declare_training(cli::OptionSet& o) {
  const TrainSettings d;
  o.add_double("label-smoothing", d.label_smoothing, "Label smoothing of the training loss.")
      .range(0, 0.99);
  o.add_double("learn-rate", d.learn_rate, "Peak learning rate of Adam.").range(1e-12, 10);
  o.add_enum("lr-schedule", {"inv-sqrt", "constant"}, name_of(d.lr_schedule),
             "inv-sqrt: linear warmup, then 1/sqrt decay; constant: warmup, then constant.");
  o.add_int("warmup", d.warmup, "Warmup updates (inv-sqrt needs >= 1).").range(0, 1e12);
  o.add_double("clip-norm", d.clip_norm, "Clip gradients to this global L2 norm (0: no clipping).")
      .range(0, kInf);
  o.add_validated("after", d.after, cli::budget_validator(),
                  "Stop after updates, epochs or wall time, whichever first: 1000u, 5e, 30m, "
                  "2h, 5e,30m; 0: no limit.");
  o.add_int("valid-freq", d.valid_freq, "Validate every N updates (0: never).").range(0, 1e12);
  o.add_int("save-freq", d.save_freq, "Save a checkpoint every N updates (0: only at the end).")
      .range(0, 1e12);
  o.add_int("disp-freq", d.disp_freq, "Print a progress line every N updates (0: never).")
      .range(0, 1e12);
  o.add_double("disp-seconds", kDefaultDispSeconds,
               "Also print one when this many seconds passed since the last; by default only "
               "when stderr is a terminal, always when given (0: by --disp-freq only).")
      .range(0, kInf);
  o.add_int("early-stopping", d.early_stopping,
            "Stop after N validations without a better validation cross-entropy (0: off).")
      .range(0, 1e9);
  o.add_int("seed", d.seed, "Seed of the initial weights, dropout and batch order.")
      .range(0, 9.0e18);
  cli::add_threads_option(o);
  o.add_int("accumulate", d.accumulate,
            "Micro-batches (of --mini-batch-words each) whose gradients are summed before one "
            "optimizer step, per rank (Marian's --optimizer-delay); the update's loss is the "
            "mean per target token over all of them.")
      .range(1, 4096);
  o.add_enum("data-parallel", {"auto", "off", "mpi"}, "auto",
             "mpi: the processes started by mpirun train one model, each computing its share "
             "of every update (R ranks x --accumulate N = 1 rank x R*N, bitwise); auto: mpi "
             "when mpirun started more than one rank; off: refuse to run under mpirun.");
  o.add_enum("gradient-exchange", {"ordered", "allreduce"}, "ordered",
             "With --data-parallel mpi: ordered sums the micro-batch gradients in one fixed "
             "order (results independent of the number of ranks); allreduce uses "
             "MPI_Allreduce (reproducible only for the same number of ranks).");
  o.add_enum("exchange-overlap", {"on", "off"}, d.exchange_overlap ? "on" : "off",
             "With --data-parallel mpi: on sends each part of the gradient as soon as the "
             "backward pass has completed it (as PyTorch's DDP does), off after the backward "
             "pass; the same parameters either way with --gradient-exchange ordered.");
  o.add_switch("resume",
               "Continue the run saved in --model (bit-exactly); starts a new one if there is "
               "none.");
}

}  // namespace

void declare_train_options(cli::OptionSet& o, ModelDirFlag model_dir) {
  declare_data(o, model_dir);
  declare_model(o);
  declare_training(o);
}

cli::OptionSet train_options() {
  cli::OptionSet o;
  declare_train_options(o);
  return o;
}

ModelSettings model_settings_from(const cli::ParsedOptions& p) {
  ModelSettings m;
  m.type = models::parse_model_type(p.get<std::string>("type"));
  if (p.has("attention"))
    m.attention = models::parse_attention_kind(p.get<std::string>("attention"));
  m.cell = models::parse_cell_type(p.get<std::string>("cell"));
  m.input_feeding = p.get<bool>("input-feeding");
  m.dim_emb = p.get<int64_t>("dim-emb");
  m.dim_rnn = p.get<int64_t>("dim-rnn");
  if (p.has("enc-depth")) m.enc_depth = p.get<int64_t>("enc-depth");
  if (p.has("dec-depth")) m.dec_depth = p.get<int64_t>("dec-depth");
  m.heads = p.get<int64_t>("heads");
  m.dim_ffn = p.get<int64_t>("dim-ffn");
  m.dropout = p.get<double>("dropout");
  return m;
}

TrainSettings train_settings_from(const cli::ParsedOptions& p) {
  TrainSettings t;
  t.vocab_size = p.get<int64_t>("vocab-size");
  t.skip_invalid = p.get<bool>("skip-invalid");
  t.max_length = p.get<int64_t>("max-length");
  t.mini_batch_words = p.get<int64_t>("mini-batch-words");
  t.label_smoothing = p.get<double>("label-smoothing");
  t.learn_rate = p.get<double>("learn-rate");
  t.lr_schedule = train::parse_lr_schedule(p.get<std::string>("lr-schedule"));
  t.warmup = p.get<int64_t>("warmup");
  t.clip_norm = p.get<double>("clip-norm");
  t.after = p.get<std::string>("after");
  t.valid_freq = p.get<int64_t>("valid-freq");
  t.save_freq = p.get<int64_t>("save-freq");
  t.disp_freq = p.get<int64_t>("disp-freq");
  if (p.is_set("disp-seconds")) t.disp_seconds = p.get<double>("disp-seconds");
  t.early_stopping = p.get<int64_t>("early-stopping");
  t.seed = p.get<int64_t>("seed");
  t.threads = p.get<int64_t>("threads");
  t.accumulate = p.get<int64_t>("accumulate");
  t.exchange_overlap = p.get<std::string>("exchange-overlap") == "on";
  return t;
}

CorpusFiles corpus_files_from(const cli::ParsedOptions& p, const char* flag) {
  const std::vector<std::string>& files = p.get_list(flag);
  QKV_CHECK(files.size() == 2, ConfigError, "--", flag,
            " takes two files (source and target), got ", files.size());
  return {files[0], files[1]};
}

bool model_flags_given(const cli::ParsedOptions& p) {
  return std::any_of(std::begin(kModelFlags), std::end(kModelFlags),
                     [&](const char* flag) { return p.is_set(flag); });
}

models::ModelConfig model_config_from(const cli::ParsedOptions& p, const data::Vocab& vocab) {
  return cli::naming_flags(
      [&] { return model_config(model_settings_from(p), vocab, p.get<int64_t>("max-length")); });
}

models::ModelConfig model_config_from(const cli::ParsedOptions& p, int64_t vocab_size) {
  return cli::naming_flags([&] {
    return model_config(model_settings_from(p), vocab_size, p.get<int64_t>("max-length"));
  });
}

train::TrainerOptions trainer_options_from(const cli::ParsedOptions& p) {
  return cli::naming_flags([&] {
    return trainer_options(train_settings_from(p), p.get<std::filesystem::path>("model"));
  });
}

}  // namespace qkv::experiment
