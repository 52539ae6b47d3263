// train_vocab: SentencePiece training fed through qkv's own reader, so gzip input,
// strict UTF-8 checks and skip counts apply to the vocabulary exactly as to training.
//
// Determinism: one trainer thread (floating-point sums in a fixed order), no input
// shuffling by SentencePiece (a sample, if asked for, is drawn here with qkv's Rng), and
// SentencePiece's process-wide seed set before training. Training runs on a fresh
// thread because SentencePiece keeps its generator in a thread_local seeded on first
// use: a new thread starts it from our seed even when an earlier training ran.
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <fstream>
#include <optional>
#include <thread>
#include <unordered_map>

#include "qkv/base/error.h"
#include "qkv/base/field_error.h"
#include "qkv/base/log.h"
#include "qkv/base/rng.h"
#include "qkv/data/parallel_corpus.h"
#include "qkv/data/vocab.h"

namespace qkv::data {
namespace {

namespace sp = sentencepiece;

// Streams the non-blank, valid lines of several files. Errors (IoError, ValueError)
// cannot cross SentencePiece's code, so they end the iteration and are kept to be
// rethrown once Train returns.
class FileSentences : public sp::SentenceIterator {
 public:
  FileSentences(const std::vector<std::filesystem::path>& files, const TextReadOptions& options,
                int64_t max_sentence_bytes, VocabTrainReport& report)
      : files_(files), options_(options), report_(report), max_sentence_bytes_(max_sentence_bytes) {
    advance();
  }
  bool done() const override { return done_; }
  void Next() override { advance(); }
  const std::string& value() const override { return value_; }
  sp::util::Status status() const override {
    if (!error_) return {};
    return {sp::util::StatusCode::kAborted, "reading the training files failed"};
  }
  std::exception_ptr error() const { return error_; }
  int64_t count() const { return count_; }

 private:
  void advance() {
    try {
      while (!done_ && !next_sentence()) {
      }
    } catch (...) {
      error_ = std::current_exception();
      done_ = true;
    }
  }

  // True when value_ holds the next sentence; false to try again (file switch, skip).
  bool next_sentence() {
    if (!reader_) {
      if (next_file_ == files_.size()) {
        done_ = true;
        return false;
      }
      reader_.emplace(files_[next_file_++], options_);
    }
    if (!reader_->next(line_)) {
      const TextFileStats& st = reader_->stats();
      if (st.kept != st.lines || st.lines == 0)
        log(LogLevel::Warning, st.describe(reader_->path()));
      report_.files.push_back(st);
      reader_.reset();
      return false;
    }
    if (line_.status != LineStatus::Ok) return false;
    if (is_blank(line_.text)) {
      ++report_.skipped_blank;
      return false;
    }
    if (static_cast<int64_t>(line_.text.size()) > max_sentence_bytes_) {
      ++report_.skipped_long;
      return false;
    }
    value_ = std::move(line_.text);
    ++count_;
    return true;
  }

  const std::vector<std::filesystem::path>& files_;
  TextReadOptions options_;
  VocabTrainReport& report_;
  int64_t max_sentence_bytes_;
  size_t next_file_ = 0;
  std::optional<TextFileReader> reader_;
  Line line_;
  std::string value_;
  int64_t count_ = 0;
  bool done_ = false;
  std::exception_ptr error_;
};

// Serves a fixed list of sentences.
class ListSentences : public sp::SentenceIterator {
 public:
  explicit ListSentences(std::vector<std::string> sentences) : sentences_(std::move(sentences)) {}
  bool done() const override { return next_ >= sentences_.size(); }
  void Next() override { ++next_; }
  const std::string& value() const override { return sentences_[next_]; }
  sp::util::Status status() const override { return {}; }
  int64_t size() const { return static_cast<int64_t>(sentences_.size()); }

 private:
  std::vector<std::string> sentences_;
  size_t next_ = 0;
};

// A uniform sample of k sentences (reservoir sampling, Vitter's Algorithm R), returned
// in corpus order so the sample does not depend on anything but (corpus, k, seed).
std::vector<std::string> sample_sentences(FileSentences& all, int64_t k, uint32_t seed) {
  std::vector<std::pair<int64_t, std::string>> reservoir;
  Rng rng(seed, /*stream=*/0x766f636162ULL);  // "vocab"
  for (int64_t i = 0; !all.done(); all.Next(), ++i) {
    if (i < k) {
      reservoir.emplace_back(i, all.value());
    } else {
      const uint64_t j = rng.uniform_int(static_cast<uint64_t>(i) + 1);
      if (j < static_cast<uint64_t>(k)) reservoir[j] = {i, all.value()};
    }
  }
  if (all.error()) std::rethrow_exception(all.error());
  std::sort(reservoir.begin(), reservoir.end());
  std::vector<std::string> out;
  out.reserve(reservoir.size());
  for (auto& [index, text] : reservoir) out.push_back(std::move(text));
  return out;
}

std::string number(double x) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return {buf, r.ptr};
}

std::unordered_map<std::string, std::string> trainer_args(int32_t vocab_size,
                                                          const VocabTrainOptions& o) {
  const int64_t max_bytes =
      std::min({o.read.max_line_bytes, o.max_sentence_bytes, int64_t{1} << 30});
  return {
      {"model_type", o.model == SubwordModel::Bpe ? "bpe" : "unigram"},
      {"vocab_size", std::to_string(vocab_size)},
      {"character_coverage", number(o.character_coverage)},
      {"pad_id", "0"},
      {"unk_id", "1"},
      {"bos_id", "2"},
      {"eos_id", "3"},
      {"pad_piece", "<pad>"},
      {"unk_piece", "<unk>"},
      {"bos_piece", "<s>"},
      {"eos_piece", "</s>"},
      {"num_threads", "1"},
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      // Our reader already bounds lines; SentencePiece would silently drop longer ones.
      {"max_sentence_length", std::to_string(max_bytes)},
      {"minloglevel", "1"},  // no INFO chatter on stderr
  };
}

// " (left out: 2 blank lines, 1 line over 16384 bytes)", or "" when nothing was.
std::string left_out(const VocabTrainReport& r, const VocabTrainOptions& o) {
  std::string s;
  auto part = [&](int64_t n, const std::string& before, const std::string& after) {
    if (n == 0) return;
    s += (s.empty() ? " (left out: " : ", ") + std::to_string(n) + before +
         (n == 1 ? " line" : " lines") + after;
  };
  part(r.skipped_blank, " blank", "");
  part(r.skipped_long, "", " over " + std::to_string(o.max_sentence_bytes) + " bytes");
  return s.empty() ? s : s + ")";
}

std::string joined(const std::vector<std::filesystem::path>& files) {
  std::string s;
  for (const auto& f : files) s += (s.empty() ? "" : ", ") + f.string();
  return s;
}

void write_atomically(const std::filesystem::path& output, const std::string& bytes) {
  const std::filesystem::path tmp = output.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    QKV_CHECK(out.good(), IoError, "cannot write vocabulary to ", output.string(),
              ": cannot create ", tmp.string(), " (does the directory exist and is it writable?)");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      QKV_THROW(IoError, "cannot write vocabulary to ", tmp.string(), " (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, output, ec);
  QKV_CHECK(!ec, IoError, "cannot rename ", tmp.string(), " to ", output.string(), ": ",
            ec.message());
}

}  // namespace

VocabTrainReport train_vocab(const std::vector<std::filesystem::path>& files, int32_t vocab_size,
                             const std::filesystem::path& output,
                             const VocabTrainOptions& options) {
  QKV_CHECK(!files.empty(), ConfigError, "train_vocab: no training files given");
  QKV_CHECK(vocab_size > 4, FieldError, "{vocab_size} must be > 4 (<pad>, <unk>, <s>, </s> ",
            "are reserved), got ", vocab_size);
  QKV_CHECK(options.character_coverage > 0.0 && options.character_coverage <= 1.0, FieldError,
            "{character_coverage} must be in (0, 1], got ", options.character_coverage);
  QKV_CHECK(options.max_sentences >= 0, FieldError, "{max_sentences} must be >= 0, got ",
            options.max_sentences);
  QKV_CHECK(options.max_sentence_bytes > 0, ConfigError, "max sentence bytes must be > 0, got ",
            options.max_sentence_bytes);

  VocabTrainReport report;
  FileSentences stream(files, options.read, options.max_sentence_bytes, report);
  std::optional<ListSentences> sample;
  if (options.max_sentences > 0)
    sample.emplace(sample_sentences(stream, options.max_sentences, options.seed));
  sp::SentenceIterator* input = sample ? static_cast<sp::SentenceIterator*>(&*sample) : &stream;

  sp::util::Status status;
  std::string model;
  std::exception_ptr crash;
  sp::SetRandomGeneratorSeed(options.seed);
  std::thread worker([&] {
    try {
      status = sp::SentencePieceTrainer::Train(trainer_args(vocab_size, options), input, &model);
    } catch (...) {
      crash = std::current_exception();
    }
  });
  worker.join();
  if (stream.error()) std::rethrow_exception(stream.error());
  if (crash) std::rethrow_exception(crash);
  report.sentences = sample ? sample->size() : stream.count();
  QKV_CHECK(report.sentences > 0, ConfigError, "no usable sentence to train the vocabulary in ",
            joined(files), " (empty, blank or skipped lines only)");
  QKV_CHECK(status.ok(), FieldError, "training the vocabulary ({vocab_size} ", vocab_size, ") on ",
            joined(files), " failed: SentencePiece says \"", status.message(),
            "\"; choose a smaller {vocab_size} or give more training text");
  write_atomically(output, model);
  log(LogLevel::Info, "trained a ", vocab_size, "-piece vocabulary on ", report.sentences,
      " sentences from ", joined(files), " -> ", output.string(), left_out(report, options));
  return report;
}

}  // namespace qkv::data
