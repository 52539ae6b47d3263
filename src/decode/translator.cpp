// decode::Translator: a model directory loaded with its vocabulary, over the driver.
#include "qkv/decode/translator.h"

#include "qkv/base/error.h"
#include "qkv/decode/force_decode.h"
#include "qkv/decode/vocab_stamp.h"

namespace qkv::decode {

namespace fs = std::filesystem;

Translator Translator::load(const fs::path& path) {
  const fs::path file = models::model_file_at(path);
  models::LoadedModel loaded = models::load_model(file);
  const fs::path vocab_path = file.parent_path() / loaded.info.vocab_file;
  std::error_code ec;
  QKV_CHECK(fs::exists(vocab_path, ec), IoError, file.string(), " names the vocabulary ",
            loaded.info.vocab_file, ", but ", vocab_path.string(), " does not exist");
  data::Vocab vocab = data::Vocab::load(vocab_path);
  QKV_CHECK(vocab.size() == loaded.info.config.vocab_size, ConfigError, "the vocabulary ",
            vocab_path.string(), " has ", vocab.size(), " pieces, but the model ", file.string(),
            " was built for ", loaded.info.config.vocab_size);
  check_vocab_stamp(loaded.info, vocab, file, vocab_path);
  loaded.model->set_training(false);
  return Translator(std::move(loaded.model), std::move(vocab), file, std::move(loaded.info));
}

Translator::Translator(std::shared_ptr<models::Seq2Seq> model, data::Vocab vocab, fs::path file,
                       models::ModelFileInfo info)
    : model_(std::move(model)),
      vocab_(std::move(vocab)),
      file_(std::move(file)),
      info_(std::move(info)) {}

std::vector<SentenceResult> Translator::translate(std::span<const std::string> sentences,
                                                  const TranslateOptions& options) const {
  return decode::translate(*model_, vocab_, sentences, options);
}

std::vector<ScoreResult> Translator::score(std::span<const std::string> sources,
                                           std::span<const std::string> targets,
                                           const ScoreOptions& options) const {
  return decode::score(*model_, vocab_, sources, targets, options);
}

std::vector<float> Translator::attention(const SentenceResult& sentence,
                                         const TranslatedHypothesis& hypothesis,
                                         const models::AttentionSelection& which) const {
  QKV_CHECK(sentence.ok(), ValueError, "attention: the sentence was not translated");
  const std::vector<std::vector<int32_t>> rows = {
      std::vector<int32_t>(sentence.source.begin(), sentence.source.end() - 1)};
  const data::Batch b = source_batch(rows, model_->config());
  const std::vector<std::vector<int32_t>> targets = {hypothesis.tokens};
  return forced_attention(*model_, b.src, b.src_lengths, targets, which)[0];
}

AttentionMaps Translator::attention_maps(const SentenceResult& sentence,
                                         const TranslatedHypothesis& hypothesis) const {
  QKV_CHECK(sentence.ok(), ValueError, "attention_maps: the sentence was not translated");
  AttentionMaps maps;
  maps.source_tokens = vocab_.pieces(sentence.source);
  maps.target_tokens = vocab_.pieces(hypothesis.tokens);
  // The EOS step has a row only when the hypothesis ended with EOS.
  const size_t rows_kept = hypothesis.token_log_probs.size();
  if (rows_kept > hypothesis.tokens.size())
    maps.target_tokens.push_back(vocab_.piece(vocab_.eos_id()));
  const std::vector<std::vector<int32_t>> source = {
      std::vector<int32_t>(sentence.source.begin(), sentence.source.end() - 1)};
  const data::Batch b = source_batch(source, model_->config());
  const std::vector<std::vector<int32_t>> targets = {hypothesis.tokens};
  const AllForcedAttention all = forced_attention_all(*model_, b.src, b.src_lengths, targets);
  if (all.distributions == 0) return maps;
  const models::ModelConfig& c = model_->config();
  const bool transformer = c.type == models::ModelType::Transformer;
  maps.layers = transformer ? c.dec_depth : 1;
  maps.heads = transformer ? c.heads : 1;
  QKV_CHECK(maps.layers * maps.heads == all.distributions, InternalError,
            "attention_maps: ", all.distributions, " distributions for ", maps.layers, " layers x ",
            maps.heads, " heads");
  // Each block is [T + 1, Ts]; keep its first rows_kept rows.
  const size_t ts = sentence.source.size(), full = (hypothesis.tokens.size() + 1) * ts;
  const std::vector<float>& rows = all.rows[0];
  maps.weights.reserve(size_t(all.distributions) * rows_kept * ts);
  for (int64_t d = 0; d < all.distributions; ++d) {
    const auto block = rows.begin() + std::ptrdiff_t(size_t(d) * full);
    maps.weights.insert(maps.weights.end(), block, block + std::ptrdiff_t(rows_kept * ts));
  }
  return maps;
}

}  // namespace qkv::decode
