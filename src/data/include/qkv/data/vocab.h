// Subword vocabulary: one joint SentencePiece model (Kudo & Richardson 2018) shared by
// source and target, so the model can tie embeddings and copy names across languages.
//
// Special ids are fixed for every vocabulary qkv trains: <pad> 0, <unk> 1, <s> 2 (BOS),
// </s> 3 (EOS). Padding with 0 is what the batcher and the models assume.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qkv/data/text_file.h"

namespace qkv::data {

enum class SubwordModel {
  Unigram,  // unigram language model (Kudo 2018), SentencePiece's default
  Bpe,      // byte-pair encoding (Sennrich et al. 2016)
};

struct VocabTrainOptions {
  SubwordModel model = SubwordModel::Unigram;
  // Seeds the sentence sample (max_sentences) and SentencePiece's generator. Training
  // is single-threaded, so the same seed and input give byte-identical model files.
  uint32_t seed = 1;
  // Fraction of characters the vocabulary must cover; the rest map to <unk>. 1.0 for
  // alphabetic languages, 0.9995 for scripts with large character sets (CJK).
  double character_coverage = 1.0;
  // > 0: train on a uniform sample of this many sentences (drawn with qkv's Rng from
  // `seed`, kept in corpus order); 0: every sentence.
  int64_t max_sentences = 0;
  // How the training files are read (invalid lines, line byte limit).
  TextReadOptions read;
  // Lines with more bytes than this are left out of the vocabulary (counted in
  // VocabTrainReport::skipped_long; `qkv train` still reads them, and skips them by
  // --max-length). SentencePiece's trainer is superlinear in the length of a repetitive
  // line: one line of "red dog " repeated took 0.5 s at 32 KiB, 9.5 s at 128 KiB, 150 s
  // at 512 KiB and 4.5 CPU minutes at 1 MiB (0.2 s at 16 KiB), so one stray line could
  // hang `qkv vocab`. No sentence is this long. Must be > 0.
  int64_t max_sentence_bytes = int64_t{1} << 14;
};

struct VocabTrainReport {
  int64_t sentences = 0;             // sentences given to SentencePiece
  int64_t skipped_blank = 0;         // blank lines (they carry nothing to learn)
  int64_t skipped_long = 0;          // lines over max_sentence_bytes
  std::vector<TextFileStats> files;  // per input file, in order
};

// Trains one joint model on all `files` (plain or gzip; source and target together) and
// writes it to `output` (a SentencePiece .model file; written to a temporary file and
// renamed, so a failure leaves no half-written model). Throws ConfigError for a bad
// vocab_size (<= 4, or more than the corpus supports: SentencePiece's message is
// included), no usable sentence or no files; IoError/ValueError as TextFileReader does;
// IoError when `output` cannot be written. Not safe to call from two threads at once
// (SentencePiece's seed is process-wide).
VocabTrainReport train_vocab(const std::vector<std::filesystem::path>& files, int32_t vocab_size,
                             const std::filesystem::path& output,
                             const VocabTrainOptions& options = {});

// A loaded SentencePiece model. Cheap to copy (shared, immutable); thread-safe to use.
class Vocab {
 public:
  // Throws IoError naming the file when it is missing, not a SentencePiece model, or
  // lacks one of <pad>, <unk>, <s>, </s>.
  static Vocab load(const std::filesystem::path& path);
  // From the bytes of a .model file (e.g. stored beside a checkpoint); `origin` names
  // them in error messages.
  static Vocab from_serialized(std::string_view bytes, std::string_view origin);

  // Text -> ids, without BOS/EOS (the batcher adds them). Text is normalised (NFKC) first.
  std::vector<int32_t> encode(std::string_view text) const;
  // Text -> pieces, e.g. "▁the", "▁ca", "t".
  std::vector<std::string> encode_pieces(std::string_view text) const;
  // Ids -> text. <pad>, <s>, </s> produce nothing, <unk> " ⁇ ". IndexError for an id
  // outside [0, size()).
  std::string decode(std::span<const int32_t> ids) const;
  // The piece of each id (for attention maps). IndexError as decode.
  std::vector<std::string> pieces(std::span<const int32_t> ids) const;
  std::string piece(int32_t id) const;
  // The id of `piece`, or unk_id() when it is not in the vocabulary.
  int32_t id_of(std::string_view piece) const;

  // Word boundaries, for merging subword attention into word alignments: a piece starts
  // a new word iff it begins with the ▁ (U+2581) marker. Special pieces never do.
  bool starts_word(int32_t id) const;
  // [T] word index of each token: the first ordinary token belongs to word 0, each
  // later one to a new word iff it starts one; <pad>, <s>, </s> get -1.
  std::vector<int32_t> word_ids(std::span<const int32_t> ids) const;

  int32_t size() const noexcept;
  int32_t pad_id() const noexcept;
  int32_t unk_id() const noexcept;
  int32_t bos_id() const noexcept;
  int32_t eos_id() const noexcept;
  // The .model file's bytes.
  std::string serialized() const;
  // "fnv1a64:<16 hex digits>" of serialized(): which vocabulary this is, as a model file
  // records it (two vocabularies of one size and special ids still differ here).
  std::string fingerprint() const;

 private:
  struct Impl;
  explicit Vocab(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  void check_id(int32_t id) const;

  std::shared_ptr<const Impl> impl_;
};

}  // namespace qkv::data
