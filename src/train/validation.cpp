// Validation: cross-entropy per target token and BLEU of greedy translations, the best
// model, early-stopping counters.
#include <algorithm>
#include <cmath>

#include "detail/trainer_state.h"
#include "qkv/autograd/functions.h"
#include "qkv/base/error.h"
#include "qkv/base/field_error.h"
#include "qkv/decode/greedy.h"
#include "qkv/decode/vocab_stamp.h"
#include "qkv/eval/bleu.h"

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

ValidationResult Trainer::validate() {
  State& s = *s_;
  QKV_CHECK(s.data.valid.has_value(), FieldError, "no validation set given ({valid_sets})");
  ValidationResult result;
  {
    const EvalMode eval(*s.model);
    const autograd::NoGradGuard no_grad;
    const models::ModelConfig& c = s.model->config();
    double loss_sum = 0;
    std::vector<std::string> hyps(s.valid_references.size());
    for (const data::Batch& b : s.valid_batches) {
      // Fused, without gradients: a validation batch's [tokens, V] logits never exist
      // whole either (only 8 MB chunks of them).
      const autograd::Variable ce =
          s.model->forward_train_loss(b.src, b.src_lengths, b.tgt_in, b.tgt_lengths, b.tgt_out,
                                      {.ignore_index = s.options.batch.pad_id});
      loss_sum += ce.value().to(DType::F64).data<double>()[0] * double(b.tgt_tokens);
      result.tgt_tokens += b.tgt_tokens;
      if (!s.options.valid_bleu) continue;
      const auto ts = double(b.src.dim(1));
      int64_t max_length = int64_t(std::ceil(s.options.valid_length_factor * ts)) + 10;
      max_length = std::min(max_length, s.options.batch.max_length + 10);
      if (c.type == models::ModelType::Transformer)
        max_length = std::min(max_length, c.max_positions);
      const auto out = decode::greedy_decode(*s.model, b.src, b.src_lengths, max_length);
      for (size_t r = 0; r < out.size(); ++r)
        hyps[size_t(b.indices[r])] = s.data.vocab.decode(out[r]);
    }
    result.loss = loss_sum / double(std::max<int64_t>(result.tgt_tokens, 1));
    if (s.options.valid_bleu) {
      const std::vector<std::vector<std::string>> refs = {s.valid_references};
      result.bleu = eval::corpus_bleu(hyps, refs).score;
    }
  }
  TrainProgress& p = s.progress;
  ++p.validations;
  result.improved =
      std::isfinite(result.loss) && (!p.best_valid_loss || result.loss < *p.best_valid_loss);
  if (result.improved) {
    p.best_valid_loss = result.loss;
    p.best_valid_bleu = result.bleu;
    p.stalled_validations = 0;
    save_model(*s.model, s.options.model_dir / kBestModelFile, kVocabFile, p.update,
               decode::vocab_stamp(s.data.vocab));
  } else {
    ++p.stalled_validations;
  }
  if (s.options.log != nullptr) {
    std::ostream& out = *s.options.log;
    out << "validation " << p.validations << " at up " << p.update << ": cross-entropy "
        << result.loss << " per target token";
    if (s.options.valid_bleu) out << ", BLEU " << result.bleu;
    if (result.improved)
      out << " (new best, saved " << kBestModelFile << ")";
    else if (p.best_valid_loss)
      out << " (best " << *p.best_valid_loss << ")";
    if (s.options.early_stopping > 0)
      out << ", stalled " << p.stalled_validations << "/" << s.options.early_stopping;
    out << "\n";
  }
  return result;
}

}  // namespace qkv::train
