// The decoding driver every front end calls (the CLI's translate / score / attend, the
// experiments, the Python module and the server): sentences in, per sentence its
// hypotheses out, in input order.
//
//   text -> encode -> drop what cannot be decoded (with a typed reason) -> sort by length
//   -> batches of `mini_batch` sentences within `batch_tokens` -> memory check -> greedy or beam
//   search
//   -> scatter back to input order.
//
// Each sentence decodes the same alone as inside any batch (beam_search's contract), so
// the batching options change speed and memory only, never an output.
//
//   decode::Translator tr = decode::Translator::load("model-dir");
//   for (const decode::SentenceResult& r : tr.translate({"A dog runs."}, {}))
//     if (r.ok()) std::cout << r.hypotheses[0].text << "\n";
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qkv/data/batcher.h"
#include "qkv/data/vocab.h"
#include "qkv/decode/beam_search.h"
#include "qkv/decode/memory.h"
#include "qkv/models/model_file.h"
#include "qkv/models/seq2seq.h"

namespace qkv::decode {

// Why a sentence was not decoded; the result holds no hypothesis then.
enum class SkipReason {
  None,
  Blank,     // the text is empty or whitespace only
  NoTokens,  // the vocabulary turns it into no subword token
  TooLong,   // more source (or target) tokens than TranslateOptions::max_length or
             // the model's positions allow (SentenceResult::token_limit)
  NoTarget,  // score(): an empty target and ScoreOptions::allow_empty_target false
};

// "empty line", "no subword tokens after normalisation", "N subword tokens, more than
// the M allowed": for messages; front ends add their own context (a flag name).
std::string describe(SkipReason reason, int64_t tokens, int64_t limit);

struct TranslateOptions {
  BeamSearchOptions search;  // beam size, n-best, normalisation, length limit, attention
  // Sources with more subword tokens (EOS not counted) are skipped with TooLong; 0: only
  // the model's own limit (a Transformer's max_positions - 1).
  int64_t max_length = 0;
  int64_t mini_batch = 32;  // sentences decoded together (>= 1)
  // A token budget as well (0: none): a batch holds at most this many source tokens,
  // padding and EOS included (sentences x the longest), and always one sentence.
  int64_t batch_tokens = 0;
  // false: with beam_size 1 and no attention kept, take greedy_decode's cheaper path,
  // which makes the same choices but reports tokens only (no log-probabilities, score 0).
  bool scores = true;
  // What a memory refusal (ResourceError) tells the user to reduce.
  std::string memory_advice = std::string(kReduceSearch);
};

struct TranslatedHypothesis {
  std::string text;                    // detokenised
  std::vector<int32_t> tokens;         // [T] output ids without BOS/EOS
  double score = 0;                    // log_prob / S^α + coverage penalty (n-best order)
  double log_prob = 0;                 // Σ token_log_probs, raw
  std::vector<float> token_log_probs;  // [S]: each token, then EOS when finished
  std::vector<float> attention;        // [S, Ts] when search.keep_attention, else empty
  bool finished = false;               // ended with EOS (false: cut at the length limit)
};

struct SentenceResult {
  SkipReason skipped = SkipReason::None;
  int64_t token_count = 0;      // source subword tokens (EOS not counted)
  int64_t token_limit = 0;      // the limit applied (for TooLong messages)
  std::vector<int32_t> source;  // [Ts] the model's source row: the tokens, then EOS
  std::vector<TranslatedHypothesis> hypotheses;  // best first; empty when skipped
  bool ok() const { return skipped == SkipReason::None; }
};

struct ScoreOptions {
  int64_t max_length = 0;          // as TranslateOptions::max_length, for either side
  int64_t mini_batch = 32;         // pairs scored together (>= 1)
  bool allow_empty_target = true;  // an empty target scores EOS alone
  // Also every attention distribution of the teacher-forced pass (forced_attention_all).
  bool all_attention = false;
  std::string memory_advice = "reduce the number of pairs scored together or the length limit";
};

struct ScoreResult {
  SkipReason skipped = SkipReason::None;
  int64_t token_count = 0, token_limit = 0;  // of the side that was too long
  std::vector<float> token_log_probs;        // [T + 1]: each target token, then EOS
  double log_prob = 0;                       // their sum (accumulated in double)
  int64_t source_length = 0;                 // Ts with EOS: the columns of `attention`
  int64_t distributions = 0;                 // blocks in `attention` (all_attention)
  std::vector<float> attention;              // distributions × [T + 1, Ts] row-major, or empty
  bool ok() const { return skipped == SkipReason::None; }
};

// Token rows [N] (ids without BOS/EOS) -> a padded source batch with the EOS `qkv train`
// appends, as search and teacher forcing take it.
data::Batch source_batch(const std::vector<std::vector<int32_t>>& rows,
                         const models::ModelConfig& config);

// Every attention distribution of one translated hypothesis, as the front ends return it
// (the Python module's arrays, the server's JSON): weights [layers, heads, target, source]
// row-major, with the piece strings of both axes. A Transformer has dec_depth layers of
// `heads` cross-attention heads; an attending rnn one layer of one head; a model that does
// not attend none (layers = heads = 0, no weights, the token strings still given).
struct AttentionMaps {
  int64_t layers = 0, heads = 0;
  std::vector<std::string> source_tokens;  // [Ts] the source pieces, then "</s>"
  // [T + 1] the hypothesis' pieces, then "</s>" for the EOS step; [T] (no EOS row) for a
  // hypothesis cut at the length limit.
  std::vector<std::string> target_tokens;
  std::vector<float> weights;  // layers × heads × target_tokens.size() × source_tokens.size()
};

// The driver over a model and its vocabulary, neither owned: both must outlive the
// calls. The model is switched to evaluation mode. ConfigError for bad options (naming
// the field), ResourceError when a batch would not fit in memory_limit().
std::vector<SentenceResult> translate(models::Seq2Seq& model, const data::Vocab& vocab,
                                      std::span<const std::string> sentences,
                                      const TranslateOptions& options);
// The same from token rows (ids without EOS), skipping only by length.
std::vector<SentenceResult> translate_tokens(models::Seq2Seq& model, const data::Vocab& vocab,
                                             std::span<const std::vector<int32_t>> rows,
                                             const TranslateOptions& options);
// Forced decoding of pairs (sources[i], targets[i]); ValueError when the counts differ.
std::vector<ScoreResult> score(models::Seq2Seq& model, const data::Vocab& vocab,
                               std::span<const std::string> sources,
                               std::span<const std::string> targets, const ScoreOptions& options);

// A loaded model directory (or file) with its vocabulary, ready to translate. Calls on
// one Translator (and its copies, which share the model) run one at a time: the model's
// decoder state is per call, but its evaluation-mode switch and dropout counters are
// shared. Different Translators (loaded separately) may run in different threads at once: the
// thread pool runs a second caller's work serially on that caller (base/thread_pool.h).
class Translator {
 public:
  // `path`: a model directory (its model.safetensors) or a model file; the vocabulary is
  // the one the file names, beside it. IoError naming the path when there is no model or
  // vocabulary there, models::load_model's errors; ConfigError when the vocabulary's size
  // differs from the model's; IoError when it is not the vocabulary the model file records
  // (check_vocab_stamp in vocab_stamp.h: a note on stderr for files that record none).
  static Translator load(const std::filesystem::path& path);

  std::vector<SentenceResult> translate(std::span<const std::string> sentences,
                                        const TranslateOptions& options) const;
  std::vector<ScoreResult> score(std::span<const std::string> sources,
                                 std::span<const std::string> targets,
                                 const ScoreOptions& options) const;
  // The attention rows [T + 1, Ts] of `which` while reading `hypothesis` (teacher forced),
  // for a layer/head other than the one the search kept; empty for a model that does not
  // attend. `sentence` is the result the hypothesis belongs to.
  std::vector<float> attention(const SentenceResult& sentence,
                               const TranslatedHypothesis& hypothesis,
                               const models::AttentionSelection& which) const;

  // Every layer's and head's attention while reading `hypothesis`, in one teacher-forced
  // pass (forced_attention_all): block (l, h) equals attention(sentence, hypothesis,
  // {l, h}) bit for bit. ValueError when the sentence was not translated.
  AttentionMaps attention_maps(const SentenceResult& sentence,
                               const TranslatedHypothesis& hypothesis) const;

  models::Seq2Seq& model() const { return *model_; }
  const data::Vocab& vocab() const { return vocab_; }
  const std::filesystem::path& file() const { return file_; }  // the model file loaded
  const models::ModelFileInfo& info() const { return info_; }

 private:
  Translator(std::shared_ptr<models::Seq2Seq> model, data::Vocab vocab, std::filesystem::path file,
             models::ModelFileInfo info);

  // Shared: a Translator is cheap to copy (copies decode with the same model, one call at
  // a time); decoding state lives in each call.
  std::shared_ptr<models::Seq2Seq> model_;
  data::Vocab vocab_;
  std::filesystem::path file_;
  models::ModelFileInfo info_;
};

}  // namespace qkv::decode
