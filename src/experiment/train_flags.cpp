#include "qkv/experiment/train_flags.h"

#include <unistd.h>

#include <algorithm>
#include <limits>

#include "qkv/base/error.h"
#include "qkv/cli/budget.h"
#include "qkv/train/memory.h"

namespace qkv::experiment {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Flags that shape the model; with --resume the model comes from the directory instead.
constexpr const char* kModelFlags[] = {"type",    "attention", "cell",      "input-feeding",
                                       "dim-emb", "dim-rnn",   "enc-depth", "dec-depth",
                                       "heads",   "dim-ffn",   "dropout"};

void declare_data(cli::OptionSet& o) {
  o.add_path("model", std::nullopt,
             "Model directory: model.safetensors, model.best.safetensors, vocab.spm and "
             "train_state.safetensors are written there.")
      .required()
      .metavar("DIR");
  o.add_list("train-sets", {}, "Source and target training corpora (plain text or .gz).")
      .required()
      .metavar("FILE");
  o.add_path("vocab", std::nullopt,
             "SentencePiece model to use (from `qkv vocab`); without it one is trained on the "
             "training corpora into DIR/vocab.spm.")
      .metavar("FILE");
  o.add_int("vocab-size", 8000, "Pieces of the vocabulary trained when --vocab is not given.")
      .range(5, 1000000);
  o.add_list("valid-sets", {}, "Source and target validation corpora (none: no validation).")
      .metavar("FILE");
  o.add_switch("skip-invalid",
               "Skip (and count) line pairs with invalid UTF-8 instead of stopping.");
  o.add_int("max-length", 100, "Skip (and count) training pairs longer than this many tokens.")
      .range(1, 100000);
  o.add_int("mini-batch-words", 4096, "Token budget of a batch, padding included, per side.")
      .range(2, 1e9);
}

void declare_model(cli::OptionSet& o) {
  o.add_enum("type", {"transformer", "rnn"}, "transformer", "Model type.");
  o.add_enum("attention", {"none", "dot", "scaled-dot", "cosine", "general", "additive"},
             std::nullopt,
             "rnn attention: none (the bottleneck baseline), Luong dot|scaled-dot|cosine|general, "
             "or Bahdanau additive (default: additive for rnn; the transformer always uses "
             "scaled-dot).");
  o.add_enum("cell", {"gru", "lstm"}, "gru", "rnn cell.");
  o.add_switch("input-feeding", "rnn with Luong attention: feed h~(t-1) into the next step.");
  o.add_int("dim-emb", 256, "Embedding size (the transformer's model size).").range(1, 65536);
  o.add_int("dim-rnn", 256, "rnn hidden size per direction.").range(1, 65536);
  o.add_int("enc-depth", std::nullopt, "Encoder layers (default: 3 transformer, 1 rnn).")
      .range(1, 64);
  o.add_int("dec-depth", std::nullopt, "Decoder layers (default: 3 transformer, 1 rnn).")
      .range(1, 64);
  o.add_int("heads", 4, "transformer attention heads (must divide --dim-emb).").range(1, 1024);
  o.add_int("dim-ffn", 1024, "transformer feed-forward size.").range(1, 1000000);
  o.add_double("dropout", 0.1, "Dropout probability.").range(0, 0.99);
}

void declare_training(cli::OptionSet& o) {
  o.add_double("label-smoothing", 0.1, "Label smoothing of the training loss.").range(0, 0.99);
  o.add_double("learn-rate", 1e-3, "Peak learning rate of Adam.").range(1e-12, 10);
  o.add_enum("lr-schedule", {"inv-sqrt", "constant"}, "inv-sqrt",
             "inv-sqrt: linear warmup, then 1/sqrt decay; constant: warmup, then constant.");
  o.add_int("warmup", 500, "Warmup updates (inv-sqrt needs >= 1).").range(0, 1e12);
  o.add_double("clip-norm", 1.0, "Clip gradients to this global L2 norm (0: no clipping).")
      .range(0, kInf);
  o.add_validated("after", "20e", cli::budget_validator(),
                  "Stop after updates, epochs or wall time, whichever first: 1000u, 5e, 30m, "
                  "2h, 5e,30m; 0: no limit.");
  o.add_int("valid-freq", 500, "Validate every N updates (0: never).").range(0, 1e12);
  o.add_int("save-freq", 500, "Save a checkpoint every N updates (0: only at the end).")
      .range(0, 1e12);
  o.add_int("disp-freq", 100, "Print a progress line every N updates (0: never).").range(0, 1e12);
  o.add_double("disp-seconds", 10,
               "Also print one when this many seconds passed since the last; by default only "
               "when stderr is a terminal, always when given (0: by --disp-freq only).")
      .range(0, kInf);
  o.add_int("early-stopping", 10,
            "Stop after N validations without a better validation cross-entropy (0: off).")
      .range(0, 1e9);
  o.add_int("seed", 1111, "Seed of the initial weights, dropout and batch order.").range(0, 9.0e18);
  o.add_int("threads", 0, "Worker threads (0: QKV_NUM_THREADS or all cores).").range(0, 256);
  o.add_int("accumulate", 1,
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
  o.add_enum("exchange-overlap", {"on", "off"}, "on",
             "With --data-parallel mpi: on sends each part of the gradient as soon as the "
             "backward pass has completed it (as PyTorch's DDP does), off after the backward "
             "pass; the same parameters either way with --gradient-exchange ordered.");
  o.add_switch("resume",
               "Continue the run saved in --model (bit-exactly); starts a new one if there is "
               "none.");
}

}  // namespace

cli::OptionSet train_options() {
  cli::OptionSet o;
  declare_data(o);
  declare_model(o);
  declare_training(o);
  return o;
}

bool model_flags_given(const cli::ParsedOptions& p) {
  return std::any_of(std::begin(kModelFlags), std::end(kModelFlags),
                     [&](const char* flag) { return p.is_set(flag); });
}

models::ModelConfig model_config_from(const cli::ParsedOptions& p, const data::Vocab& vocab) {
  models::ModelConfig c = model_config_from(p, vocab.size());
  c.pad_id = vocab.pad_id();
  c.bos_id = vocab.bos_id();
  c.eos_id = vocab.eos_id();
  models::validate(c);
  return c;
}

models::ModelConfig model_config_from(const cli::ParsedOptions& p, int64_t vocab_size) {
  models::ModelConfig c;
  c.type = models::parse_model_type(p.get<std::string>("type"));
  const bool transformer = c.type == models::ModelType::Transformer;
  if (p.has("attention")) {
    c.attention = models::parse_attention_kind(p.get<std::string>("attention"));
    QKV_CHECK(!transformer || c.attention == models::AttentionKind::ScaledDot, ConfigError,
              "--attention ", p.get<std::string>("attention"),
              ": the transformer always uses scaled-dot attention; --attention chooses the "
              "attention of --type rnn");
  } else {
    c.attention = transformer ? models::AttentionKind::ScaledDot : models::AttentionKind::Additive;
  }
  c.cell = models::parse_cell_type(p.get<std::string>("cell"));
  c.input_feeding = p.get<bool>("input-feeding");
  QKV_CHECK(!c.input_feeding || (!transformer && c.attention != models::AttentionKind::None &&
                                 c.attention != models::AttentionKind::Additive),
            ConfigError,
            "--input-feeding needs --type rnn with --attention dot, scaled-dot, cosine or "
            "general");
  c.vocab_size = vocab_size;
  c.dim_emb = p.get<int64_t>("dim-emb");
  c.dim_rnn = p.get<int64_t>("dim-rnn");
  const int64_t depth = transformer ? 3 : 1;
  c.enc_depth = p.has("enc-depth") ? p.get<int64_t>("enc-depth") : depth;
  c.dec_depth = p.has("dec-depth") ? p.get<int64_t>("dec-depth") : depth;
  c.heads = p.get<int64_t>("heads");
  QKV_CHECK(!transformer || c.dim_emb % c.heads == 0, ConfigError, "--heads ", c.heads,
            " must divide --dim-emb ", c.dim_emb);
  c.dim_ffn = p.get<int64_t>("dim-ffn");
  c.dropout = p.get<double>("dropout");
  // Room for the longest training pair (+ BOS/EOS); longer validation pairs are left out.
  c.max_positions = std::max<int64_t>(1024, p.get<int64_t>("max-length") + 2);
  models::validate(c);
  // Parameters, gradients and Adam's moments must fit before anything is read or trained
  // (ResourceError naming the size flags); the batches are checked once they are cut.
  train::check_training_memory(c);
  return c;
}

train::TrainerOptions trainer_options_from(const cli::ParsedOptions& p) {
  train::TrainerOptions o;
  o.model_dir = p.get<std::filesystem::path>("model");
  o.batch.mini_batch_words = p.get<int64_t>("mini-batch-words");
  o.batch.max_length = p.get<int64_t>("max-length");
  QKV_CHECK(o.batch.mini_batch_words >= o.batch.max_length + 1, ConfigError, "--mini-batch-words ",
            o.batch.mini_batch_words,
            " must be at least --max-length + 1 = ", o.batch.max_length + 1,
            " so that every kept pair fits in a batch");
  o.seed = static_cast<uint64_t>(p.get<int64_t>("seed"));
  o.schedule = {.kind = train::parse_lr_schedule(p.get<std::string>("lr-schedule")),
                .learning_rate = p.get<double>("learn-rate"),
                .warmup = p.get<int64_t>("warmup")};
  train::validate(o.schedule);
  o.clip_norm = p.get<double>("clip-norm");
  o.label_smoothing = p.get<double>("label-smoothing");
  o.valid_freq = p.get<int64_t>("valid-freq");
  o.save_freq = p.get<int64_t>("save-freq");
  o.disp_freq = p.get<int64_t>("disp-freq");
  // A log file or pipe gets lines by count only (reproducible logs) unless asked.
  o.disp_seconds =
      p.is_set("disp-seconds") || isatty(STDERR_FILENO) != 0 ? p.get<double>("disp-seconds") : 0.0;
  o.early_stopping = p.get<int64_t>("early-stopping");
  o.accumulate = p.get<int64_t>("accumulate");
  o.overlap_exchange = p.get<std::string>("exchange-overlap") == "on";
  const cli::Budget budget = cli::parse_budget(p.get<std::string>("after"));
  o.after.updates = budget.updates;
  o.after.epochs = budget.epochs;
  if (budget.wall_time) o.after.seconds = double(budget.wall_time->count());
  return o;
}

}  // namespace qkv::experiment
