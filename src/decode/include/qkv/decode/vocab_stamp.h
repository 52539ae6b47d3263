// A model file's record of its vocabulary (models::VocabStamp) made from and checked
// against a data::Vocab: decode is the lowest layer that sees both. Training stamps every
// model file it writes; loading a model directory checks the vocab.spm beside it, so a
// swapped vocabulary is an error instead of garbage translations with exit code 0.
#pragma once

#include <filesystem>

#include "qkv/data/vocab.h"
#include "qkv/models/model_file.h"

namespace qkv::decode {

models::VocabStamp vocab_stamp(const data::Vocab& vocab);

// IoError (a model directory with the wrong file in it) naming both files when `info`'s stamp
// differs from `vocab` (fingerprint, size or a special id). A file without a stamp (written before
// stamps) cannot be checked: a note on stderr (log level info) says so, and it loads as before.
void check_vocab_stamp(const models::ModelFileInfo& info, const data::Vocab& vocab,
                       const std::filesystem::path& model_file,
                       const std::filesystem::path& vocab_file);

}  // namespace qkv::decode
