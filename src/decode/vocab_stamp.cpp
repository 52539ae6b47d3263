#include "qkv/decode/vocab_stamp.h"

#include <string>

#include "qkv/base/error.h"
#include "qkv/base/log.h"

namespace qkv::decode {

namespace fs = std::filesystem;

models::VocabStamp vocab_stamp(const data::Vocab& vocab) {
  return {.fingerprint = vocab.fingerprint(),
          .size = vocab.size(),
          .pad_id = vocab.pad_id(),
          .unk_id = vocab.unk_id(),
          .bos_id = vocab.bos_id(),
          .eos_id = vocab.eos_id()};
}

namespace {

// "fingerprint fnv1a64:..., 160 pieces, special ids pad 0 unk 1 bos 2 eos 3".
std::string describe(const models::VocabStamp& s) {
  return "fingerprint " + s.fingerprint + ", " + std::to_string(s.size) +
         " pieces, special ids pad " + std::to_string(s.pad_id) + " unk " +
         std::to_string(s.unk_id) + " bos " + std::to_string(s.bos_id) + " eos " +
         std::to_string(s.eos_id);
}

}  // namespace

void check_vocab_stamp(const models::ModelFileInfo& info, const data::Vocab& vocab,
                       const fs::path& model_file, const fs::path& vocab_file) {
  if (!info.vocab_stamp) {
    log(LogLevel::Info, "note: ", model_file.string(),
        " records no vocabulary fingerprint (written before qkv stored one), so ",
        vocab_file.string(),
        " cannot be checked against it and is used as is (models trained now record it)");
    return;
  }
  const models::VocabStamp have = vocab_stamp(vocab);
  QKV_CHECK(have == *info.vocab_stamp, IoError, "the vocabulary ", vocab_file.string(),
            " is not the one the model ", model_file.string(), " was trained with (the model ",
            "records ", describe(*info.vocab_stamp), "; the file has ", describe(have),
            "); put the model's own vocab.spm from its training directory beside it");
}

}  // namespace qkv::decode
