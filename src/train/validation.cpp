// Validation: cross-entropy per target token, the best loss and early-stopping counters;
// the observers the caller installed (BLEU, the best model: experiment/validators.h).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>

#include "detail/trainer_state.h"
#include "qkv/autograd/functions.h"
#include "qkv/base/error.h"
#include "qkv/base/field_error.h"
#include "qkv/base/format.h"
#include "qkv/train/checkpoint.h"

namespace qkv::train {
namespace {

// Restores training mode however validation ends.
class EvalMode {
 public:
  explicit EvalMode(models::Seq2Seq& model) : model_(model) { model_.set_training(false); }
  ~EvalMode() { model_.set_training(true); }
  EvalMode(const EvalMode&) = delete;
  EvalMode& operator=(const EvalMode&) = delete;

 private:
  models::Seq2Seq& model_;
};

// "validation 3 at up 300: cross-entropy 2.1 per target token, BLEU 12.5 (new best, saved
// model.best.safetensors), stalled 0/10; 252.4 s training + 20.1 s validating": what the
// observers added, in the trainer's words.
void log_validation(std::ostream& out, const ValidationResult& result, const TrainProgress& p,
                    int64_t early_stopping) {
  out << "validation " << p.validations << " at up " << p.update << ": cross-entropy "
      << result.loss << " per target token";
  if (result.bleu) out << ", BLEU " << *result.bleu;
  if (result.improved)
    out << " (new best" << (result.saved.empty() ? "" : ", saved " + result.saved) << ")";
  else if (p.best_valid_loss)
    out << " (best " << *p.best_valid_loss << ")";
  if (early_stopping > 0) out << ", stalled " << p.stalled_validations << "/" << early_stopping;
  out << "; " << format_fixed(p.wall_seconds - p.valid_seconds, 1) << " s training + "
      << format_fixed(p.valid_seconds, 1) << " s validating\n";
}

constexpr const char* kValidationLogHeader =
    "validation\tupdate\ttokens_seen\ttrain_seconds\tvalid_seconds\tcross_entropy\tbleu";

// The validation number a row of validations.tsv starts with; none for the header or a
// line that does not start with one.
std::optional<int64_t> row_validation(const std::string& line) {
  int64_t v = 0;
  const char* end = line.data() + line.size();
  const auto [ptr, ec] = std::from_chars(line.data(), end, v);
  if (ec != std::errc() || ptr == end || *ptr != '\t') return std::nullopt;
  return v;
}

}  // namespace

ValidationSet make_validation_set(const data::ParallelCorpus& corpus, const data::Vocab& vocab) {
  auto tokenized = std::make_shared<data::TokenizedCorpus>(data::tokenize(corpus, vocab));
  QKV_CHECK(!tokenized->source.empty(), FieldError,
            "no validation pair left: ", tokenized->stats.describe(), "; check {valid_sets}");
  ValidationSet set;
  // tokenize() keeps a subsequence of the pairs: walk both by line number.
  size_t j = 0;
  for (const int64_t line : tokenized->line_numbers) {
    while (j < corpus.line_numbers.size() && corpus.line_numbers[j] != line) ++j;
    QKV_CHECK(j < corpus.line_numbers.size(), InternalError, "validation line ", line,
              " not found in the corpus");
    set.references.push_back(corpus.target[j]);
  }
  set.corpus = std::move(tokenized);
  return set;
}

void Trainer::State::prepare_validation() {
  if (!data.valid) return;
  const data::TokenizedCorpus& all = *data.valid->corpus;
  QKV_CHECK(
      all.target.size() == all.source.size() && data.valid->references.size() == all.source.size(),
      ValueError, "validation set: ", all.source.size(), " sources, ", all.target.size(),
      " targets and ", data.valid->references.size(), " references");
  // The Transformer's position table bounds what it can read (source + EOS, BOS + target).
  const models::ModelConfig& c = model->config();
  const auto limit = size_t(std::max<int64_t>(models::max_sequence_tokens(c), 1));
  data::TokenizedCorpus kept;
  for (size_t i = 0; i < all.source.size(); ++i) {
    if (all.source[i].size() > limit || all.target[i].size() > limit) continue;
    kept.source.push_back(all.source[i]);
    kept.target.push_back(all.target[i]);
    kept.line_numbers.push_back(all.line_numbers[i]);
    valid_references.push_back(data.valid->references[i]);
  }
  const size_t left_out = all.source.size() - kept.source.size();
  if (left_out > 0 && options.log != nullptr)
    *options.log << "validation: " << left_out << " pairs longer than " << limit
                 << " tokens left out (max_positions " << c.max_positions << ")\n";
  QKV_CHECK(!kept.source.empty(), ConfigError, "no validation pair within ", limit, " tokens");
  valid_batches = data::batches_in_order(kept, options.batch);
}

void Trainer::State::log_validation_row(const ValidationResult& result) {
  const std::filesystem::path path = options.model_dir / kValidationLogFile;
  if (!valid_log_ready) {
    // Rows of validations after the checkpoint this run continues from (a run that
    // stopped before saving) are repeated by this one: drop them, keep the earlier ones.
    std::string kept;
    if (std::ifstream old(path); old) {
      for (std::string line; std::getline(old, line);) {
        const std::optional<int64_t> v = row_validation(line);
        if (v && *v < progress.validations) kept += line + "\n";
      }
    }
    std::ofstream out(path, std::ios::trunc);
    out << kValidationLogHeader << "\n" << kept;
    QKV_CHECK(out.flush(), IoError, "cannot write ", path.string(),
              " (the validation log): check that the model directory is writable");
    valid_log_ready = true;
  }
  std::ostringstream row;
  row << progress.validations << '\t' << progress.update << '\t' << progress.tokens_seen << '\t'
      << format_fixed(progress.wall_seconds - progress.valid_seconds, 3) << '\t'
      << format_fixed(progress.valid_seconds, 3) << '\t' << format_fixed(result.loss, 6) << '\t';
  if (result.bleu) row << format_fixed(*result.bleu, 4);
  std::ofstream out(path, std::ios::app);
  out << row.str() << "\n";
  QKV_CHECK(out.flush(), IoError, "cannot append to ", path.string(),
            " (the validation log): check that the model directory is writable");
}

ValidationResult Trainer::validate() {
  State& s = *s_;
  const Clock::time_point start = Clock::now();
  QKV_CHECK(s.data.valid.has_value(), FieldError, "no validation set given ({valid_sets})");
  TrainProgress& p = s.progress;
  ValidationResult result;
  {
    const EvalMode eval(*s.model);
    const autograd::NoGradGuard no_grad;
    double loss_sum = 0;
    for (const data::Batch& b : s.valid_batches) {
      // Fused, without gradients: a validation batch's [tokens, V] logits never exist
      // whole either (only 8 MB chunks of them).
      const autograd::Variable ce =
          s.model->forward_train_loss(b.src, b.src_lengths, b.tgt_in, b.tgt_lengths, b.tgt_out,
                                      {.ignore_index = s.options.batch.pad_id});
      loss_sum += ce.value().to(DType::F64).data<double>()[0] * double(b.tgt_tokens);
      result.tgt_tokens += b.tgt_tokens;
    }
    result.loss = loss_sum / double(std::max<int64_t>(result.tgt_tokens, 1));
    result.improved =
        std::isfinite(result.loss) && (!p.best_valid_loss || result.loss < *p.best_valid_loss);
    const ValidationContext context{.model = *s.model,
                                    .vocab = s.data.vocab,
                                    .batches = s.valid_batches,
                                    .references = s.valid_references,
                                    .options = s.options,
                                    .update = p.update};
    for (const ValidationObserver& observe : s.options.validation_observers)
      observe(context, result);
  }
  ++p.validations;
  if (result.improved) {
    p.best_valid_loss = result.loss;
    p.best_valid_bleu = result.bleu.value_or(0.0);
    p.stalled_validations = 0;
  } else {
    ++p.stalled_validations;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  p.valid_seconds += seconds;
  p.wall_seconds = s.wall_seconds();  // the log's "training" excludes validation up to now
  s.log_validation_row(result);
  if (s.options.log != nullptr) log_validation(*s.options.log, result, p, s.options.early_stopping);
  return result;
}

}  // namespace qkv::train
