#include "qkv/experiment/settings.h"

#include <unistd.h>

#include <algorithm>

#include "qkv/base/field_error.h"
#include "qkv/cli/budget.h"
#include "qkv/experiment/validators.h"
#include "qkv/train/memory.h"

namespace qkv::experiment {

namespace {

// The config the settings describe, checked for what only the settings know (which
// field the user set); models::validate and the memory check are checked()'s.
models::ModelConfig config_of(const ModelSettings& m, int64_t vocab_size, int64_t max_length) {
  models::ModelConfig c;
  c.type = m.type;
  const bool transformer = c.type == models::ModelType::Transformer;
  if (m.attention) {
    c.attention = *m.attention;
    QKV_CHECK(!transformer || c.attention == models::AttentionKind::ScaledDot, FieldError,
              "{attention} ", models::to_string(c.attention),
              ": the transformer always uses scaled-dot attention; {attention} chooses the "
              "attention of {type} rnn");
  } else {
    c.attention = transformer ? models::AttentionKind::ScaledDot : models::AttentionKind::Additive;
  }
  c.cell = m.cell;
  c.input_feeding = m.input_feeding;
  QKV_CHECK(!c.input_feeding || (!transformer && c.attention != models::AttentionKind::None &&
                                 c.attention != models::AttentionKind::Additive),
            FieldError,
            "{input_feeding} needs {type} rnn with {attention} dot, scaled-dot, cosine or "
            "general");
  c.vocab_size = vocab_size;
  c.dim_emb = m.dim_emb;
  c.dim_rnn = m.dim_rnn;
  const int64_t depth = transformer ? 3 : 1;
  c.enc_depth = m.enc_depth.value_or(depth);
  c.dec_depth = m.dec_depth.value_or(depth);
  c.heads = m.heads;
  QKV_CHECK(!transformer || (c.heads > 0 && c.dim_emb % c.heads == 0), FieldError, "{heads} ",
            c.heads, " must divide {dim_emb} ", c.dim_emb);
  c.dim_ffn = m.dim_ffn;
  c.dropout = m.dropout;
  // Room for the longest training pair (+ BOS/EOS); longer validation pairs are left out.
  c.max_positions = std::max<int64_t>(1024, max_length + 2);
  return c;
}

// Validates `c` (ConfigError naming the key) and checks that its parameters, gradients
// and Adam's moments fit before anything is read or trained (FieldResourceError naming
// the size fields), in one call: the memory estimate validates the config it is given.
// The batches are checked once they are cut (the Trainer).
models::ModelConfig checked(const models::ModelConfig& c) {
  train::check_training_memory(c);
  return c;
}

}  // namespace

models::ModelConfig model_config(const ModelSettings& m, int64_t vocab_size, int64_t max_length) {
  return checked(config_of(m, vocab_size, max_length));
}

models::ModelConfig model_config(const ModelSettings& m, const data::Vocab& vocab,
                                 int64_t max_length) {
  models::ModelConfig c = config_of(m, vocab.size(), max_length);
  c.pad_id = vocab.pad_id();
  c.bos_id = vocab.bos_id();
  c.eos_id = vocab.eos_id();
  return checked(c);
}

train::TrainerOptions trainer_options(const TrainSettings& t,
                                      const std::filesystem::path& model_dir) {
  train::TrainerOptions o;
  o.model_dir = model_dir;
  o.batch.mini_batch_words = t.mini_batch_words;
  o.batch.max_length = t.max_length;
  QKV_CHECK(o.batch.mini_batch_words >= o.batch.max_length + 1, FieldError, "{mini_batch_words} ",
            o.batch.mini_batch_words,
            " must be at least {max_length} + 1 = ", o.batch.max_length + 1,
            " so that every kept pair fits in a batch");
  o.seed = static_cast<uint64_t>(t.seed);
  o.schedule = {.kind = t.lr_schedule, .learning_rate = t.learn_rate, .warmup = t.warmup};
  o.clip_norm = t.clip_norm;
  o.label_smoothing = t.label_smoothing;
  o.valid_freq = t.valid_freq;
  o.save_freq = t.save_freq;
  o.disp_freq = t.disp_freq;
  // A log file or pipe gets lines by count only (reproducible logs) unless asked.
  o.disp_seconds = t.disp_seconds.value_or(isatty(STDERR_FILENO) != 0 ? kDefaultDispSeconds : 0.0);
  o.early_stopping = t.early_stopping;
  o.accumulate = t.accumulate;
  o.overlap_exchange = t.exchange_overlap;
  cli::Budget budget;
  try {
    budget = cli::parse_budget(t.after, "{after}");
  } catch (const ConfigError& e) {  // its message starts with the name given: a mark
    throw FieldError(e.what(), e.where());
  }
  o.after.updates = budget.updates;
  o.after.epochs = budget.epochs;
  if (budget.wall_time) o.after.seconds = double(budget.wall_time->count());
  train::check_options(o);  // every option before any work, not once the data is read
  // What a validation does besides the cross-entropy, for every front end alike.
  o.validation_observers = standard_validators();
  return o;
}

std::string_view to_string(train::LrSchedule schedule) noexcept {
  return schedule == train::LrSchedule::InvSqrt ? "inv-sqrt" : "constant";
}

}  // namespace qkv::experiment
