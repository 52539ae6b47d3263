// qkv score: the model's log-probability of given translations (forced decoding), one
// output line per input pair, always.
#include <iostream>

#include "command.h"
#include "decode_support.h"
#include "qkv/base/format.h"
#include "qkv/cli/common_options.h"
#include "qkv/cli/options.h"
#include "qkv/cli/progress.h"
#include "qkv/decode/translator.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

cli::OptionSet score_options() {
  cli::OptionSet o;
  cli::add_model_option(o);
  o.add_path("src", std::nullopt, "Source sentences, one per line (with --tgt; else stdin).")
      .metavar("FILE");
  o.add_path("tgt", std::nullopt, "Their translations to score, line by line.").metavar("FILE");
  cli::add_max_length_option(o);
  cli::add_mini_batch_option(o);
  cli::add_threads_option(o);
  cli::add_progress_option(o);
  return o;
}

// At the end of input: refuses stdin in which no line had ` ||| ` (plain text piped in by
// mistake): every line would be an empty output line and a warning, with exit 0.
void check_format(const data::SeparatedPairReader& in) {
  QKV_CHECK(in.separator_seen() || in.lines_without_separator() == 0, ValueError,
            "stdin: no line has ' ||| ' (", in.lines_without_separator(),
            " without it): qkv score reads one `source ||| translation` pair per line, e.g. "
            "paste SRC TGT | sed 's/\t/ ||| /' | qkv score -m DIR; or pass --src SRC --tgt TGT");
}
void check_format(const data::ParallelLineReader&) {}
bool format_seen(const data::SeparatedPairReader& in) {
  return in.separator_seen();
}
bool format_seen(const data::ParallelLineReader&) {
  return true;
}

// Why a pair gives an empty output line, as the warning says it.
std::optional<std::string> skip_message(const data::LinePair& pair, const decode::ScoreResult& r) {
  if (pair.problem) return pair.problem;
  if (r.skipped == decode::SkipReason::NoTokens) return std::string("empty source sentence");
  if (r.skipped == decode::SkipReason::TooLong)
    return std::string("more subword tokens than the model scores (--max-length)");
  return std::nullopt;
}

// Scores one chunk and writes "<log p> <log p per token>" per pair, in input order.
void score_chunk(const std::vector<data::LinePair>& pairs, const decode::Translator& tr,
                 const cli::ParsedOptions& p) {
  std::vector<std::string> sources, targets;
  for (const data::LinePair& pair : pairs) {  // a pair with a problem is not encoded: skipped
    sources.push_back(pair.problem ? std::string() : pair.source);
    targets.push_back(pair.problem ? std::string() : pair.target);
  }
  const decode::ScoreOptions options{.max_length = p.get<int64_t>("max-length"),
                                     .mini_batch = p.get<int64_t>("mini-batch"),
                                     .memory_advice = "reduce --mini-batch or --max-length"};
  const std::vector<decode::ScoreResult> results = tr.score(sources, targets, options);
  for (size_t i = 0; i < pairs.size(); ++i)
    if (const auto problem = skip_message(pairs[i], results[i]))
      warn_line("score", pairs[i].number, *problem);
  for (const decode::ScoreResult& r : results) {
    if (r.ok())
      std::cout << format_fixed(r.log_prob, 6) << " "
                << format_fixed(r.log_prob / double(r.token_log_probs.size()), 6);
    std::cout << '\n';
  }
  std::cout.flush();
  QKV_CHECK(std::cout.good(), IoError, "writing the scores (stdout) failed");
}

template <class Source>
void score_all(Source& source, const decode::Translator& tr, const cli::ParsedOptions& p,
               int64_t total_bytes) {
  cli::Progress progress("qkv score", "pair", cli::progress_interval(p), total_bytes, std::cerr);
  int64_t scored = 0, consumed = 0;
  const auto chunk = size_t(p.get<int64_t>("mini-batch")) * 10;
  std::vector<data::LinePair> pairs, held;
  // Only what is there: a slow writer gets each score before it sends the next pair.
  while (const size_t bytes = data::read_available(source, pairs, chunk, kMaxChunkBytes)) {
    consumed += int64_t(bytes);
    // Lines before the first with ` ||| ` wait (unscored: they have no pair), so input
    // in the wrong format is refused with nothing written rather than as empty lines.
    held.insert(held.end(), std::make_move_iterator(pairs.begin()),
                std::make_move_iterator(pairs.end()));
    if (!format_seen(source)) continue;
    score_chunk(held, tr, p);
    scored += int64_t(held.size());
    held.clear();
    progress.update(scored, consumed);
  }
  check_format(source);
  if (!held.empty()) score_chunk(held, tr, p);  // only unusable lines: empty lines, warned
}

int score(const cli::ParsedOptions& p, std::span<const char* const> /*args*/) {
  QKV_CHECK(p.has("src") == p.has("tgt"), ConfigError, p.has("src") ? "--src" : "--tgt", " needs ",
            p.has("src") ? "--tgt" : "--src",
            " too (or give neither and pipe `source ||| translation` lines to stdin)");
  cli::apply_threads_option(p);
  const decode::Translator tr = load_translator(p.get<fs::path>("model"));
  if (p.has("src")) {
    data::ParallelLineReader files(p.get<fs::path>("src"), p.get<fs::path>("tgt"), kMaxLineBytes);
    std::error_code ec;  // a size unknown (a pipe, a FIFO) only drops the share done
    const auto size = [&](const char* flag) {
      const auto s = fs::file_size(p.get<fs::path>(flag), ec);
      return ec ? int64_t{0} : int64_t(s);
    };
    const int64_t src = size("src"), tgt = size("tgt");
    score_all(files, tr, p, src > 0 && tgt > 0 ? src + tgt : 0);
  } else {
    data::SeparatedPairReader in(std::cin, kMaxLineBytes);
    score_all(in, tr, p, cli::stdin_file_size());
  }
  return kExitOk;
}

}  // namespace

int score_main(int argc, const char* const* argv) {
  return run_subcommand(
      {"score", score_options, score,
       "Scores translations with a model (forced decoding): for each `source ||| "
       "translation` line of stdin (or each line pair of --src/--tgt) writes the "
       "log-probability of the translation as two numbers, `<sum> <sum / tokens>`: the raw "
       "sum of the token log-probabilities and that sum divided by the target tokens "
       "(EOS counted). Neither is `translate --n-best`'s score, which divides by "
       "length^α (--normalize). A pair that cannot be scored gives an empty line and a "
       "warning (line numbers 1-based); input in which no line has ` ||| ` is refused."},
      argc, argv);
}

}  // namespace qkv::tool
