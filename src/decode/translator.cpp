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

}  // namespace qkv::decode
