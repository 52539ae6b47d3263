#include "qkv/experiment/validators.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "qkv/base/field_error.h"
#include "qkv/decode/greedy.h"
#include "qkv/decode/vocab_stamp.h"
#include "qkv/eval/bleu.h"
#include "qkv/train/checkpoint.h"

namespace qkv::experiment {

train::ValidationObserver bleu_validator(double valid_length_factor) {
  QKV_CHECK(std::isfinite(valid_length_factor) && valid_length_factor > 0, FieldError,
            "{valid_length_factor} ", valid_length_factor, " must be > 0");
  return [valid_length_factor](const train::ValidationContext& v, train::ValidationResult& r) {
    const models::ModelConfig& c = v.model.config();
    std::vector<std::string> hyps(v.references.size());
    for (const data::Batch& b : v.batches) {
      const auto ts = double(b.src.dim(1));
      int64_t max_length = int64_t(std::ceil(valid_length_factor * ts)) + 10;
      max_length = std::min(max_length, v.options.batch.max_length + 10);
      if (c.type == models::ModelType::Transformer)
        max_length = std::min(max_length, c.max_positions);
      const auto out = decode::greedy_decode(v.model, b.src, b.src_lengths, max_length);
      for (size_t i = 0; i < out.size(); ++i) hyps[size_t(b.indices[i])] = v.vocab.decode(out[i]);
    }
    const std::vector<std::vector<std::string>> refs = {
        std::vector<std::string>(v.references.begin(), v.references.end())};
    r.bleu = eval::corpus_bleu(hyps, refs).score;
  };
}

train::ValidationObserver best_model_saver() {
  return [](const train::ValidationContext& v, train::ValidationResult& r) {
    if (!r.improved) return;
    models::save_model(v.model, v.options.model_dir / train::kBestModelFile, train::kVocabFile,
                       v.update, decode::vocab_stamp(v.vocab));
    r.saved = train::kBestModelFile;
  };
}

std::vector<train::ValidationObserver> standard_validators() {
  return {bleu_validator(), best_model_saver()};
}

}  // namespace qkv::experiment
