// qkv score: the model's log-probability of given translations (forced decoding), one
// output line per input pair, always.
#include <iostream>

#include "command.h"
#include "decode_commands.h"
#include "decode_support.h"
#include "qkv/cli/common_options.h"
#include "qkv/cli/options.h"
#include "qkv/cli/progress.h"
#include "qkv/decode/translator.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxLineBytes = int64_t{1} << 20;

cli::OptionSet score_options() {
  cli::OptionSet o;
  o.add_path("model", std::nullopt,
             "Model directory written by `qkv train` (its model.safetensors), or a model file.")
      .alias('m')
      .required()
      .metavar("DIR");
  o.add_path("src", std::nullopt, "Source sentences, one per line (with --tgt; else stdin).")
      .metavar("FILE");
  o.add_path("tgt", std::nullopt, "Their translations to score, line by line.").metavar("FILE");
  cli::add_max_length_option(o);
  cli::add_mini_batch_option(o);
  cli::add_threads_option(o);
  cli::add_progress_option(o);
  return o;
}

// One input pair: its line number and text, or why it cannot be scored.
struct Pair {
  int64_t number = 0;
  std::string source, target;
  std::optional<std::string> problem;
};

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

// "src ||| tgt" from stdin (spaces around ||| are not part of either side).
class StdinPairs {
 public:
  bool next(Pair& pair) {
    data::Line line;
    if (!reader_.next(line)) return false;
    pair = Pair{line.number, {}, {}, std::nullopt};
    // Unreadable or blank: said as such (an empty line is no evidence of a wrong format).
    if (line.status != data::LineStatus::Ok || data::is_blank(line.text)) {
      pair.problem = line_problem(line, kMaxLineBytes);
      return true;
    }
    const size_t bar = line.text.find("|||");
    if (bar == std::string::npos) {
      pair.problem = "no ' ||| ' between the source and the translation";
      ++without_separator_;
      return true;
    }
    seen_separator_ = true;
    pair.source = trim(line.text.substr(0, bar));
    pair.target = trim(line.text.substr(bar + 3));
    return true;
  }
  bool ready() { return reader_.ready(); }
  // Whether a line so far had the separator: until then, the input may not be pairs.
  bool format_seen() const { return seen_separator_; }
  // At the end of input: refuses stdin in which no line had ` ||| ` (plain text piped in
  // by mistake): every line would be an empty output line and a warning, with exit 0.
  void check_format() const {
    QKV_CHECK(seen_separator_ || without_separator_ == 0, ValueError,
              "stdin: no line has ' ||| ' (", without_separator_,
              " without it): qkv score reads one `source ||| translation` pair per line, e.g. "
              "paste SRC TGT | sed 's/\t/ ||| /' | qkv score -m DIR; or pass --src SRC --tgt TGT");
  }

 private:
  LineReader reader_{std::cin, kMaxLineBytes};
  bool seen_separator_ = false;
  int64_t without_separator_ = 0;
};

// --src and --tgt read in lockstep; unequal line counts are an error naming both files.
class FilePairs {
 public:
  FilePairs(const fs::path& src, const fs::path& tgt)
      : src_(src, {.invalid = data::InvalidLines::Skip, .max_line_bytes = kMaxLineBytes}),
        tgt_(tgt, {.invalid = data::InvalidLines::Skip, .max_line_bytes = kMaxLineBytes}) {}

  bool next(Pair& pair) {
    data::Line s, t;
    const bool has_s = src_.next(s), has_t = tgt_.next(t);
    // A reader at its end leaves its Line untouched: its stats hold the line count.
    QKV_CHECK(has_s == has_t, ValueError, "--src ", src_.path().string(), " and --tgt ",
              tgt_.path().string(),
              " differ in length: ", (has_s ? tgt_.path() : src_.path()).string(), " ends after ",
              (has_s ? tgt_.stats().lines : src_.stats().lines), " lines, ",
              (has_s ? src_.path() : tgt_.path()).string(),
              " goes on; give one translation per source line, aligned line by line");
    if (!has_s) return false;
    pair = Pair{s.number, s.text, t.text, std::nullopt};
    if (auto p = line_problem(s, kMaxLineBytes); p && s.status != data::LineStatus::Ok)
      pair.problem = "--src: " + *p;
    else if (auto q = line_problem(t, kMaxLineBytes); q && t.status != data::LineStatus::Ok)
      pair.problem = "--tgt: " + *q;
    return true;
  }
  bool ready() const { return true; }  // files never wait
  bool format_seen() const { return true; }
  void check_format() const {}

 private:
  data::TextFileReader src_, tgt_;
};

// Why a pair gives an empty output line, as the warning says it.
std::optional<std::string> skip_message(const Pair& pair, const decode::ScoreResult& r) {
  if (pair.problem) return pair.problem;
  if (r.skipped == decode::SkipReason::NoTokens) return std::string("empty source sentence");
  if (r.skipped == decode::SkipReason::TooLong)
    return std::string("more subword tokens than the model scores (--max-length)");
  return std::nullopt;
}

// Scores one chunk and writes "<log p> <log p per token>" per pair, in input order.
void score_chunk(const std::vector<Pair>& pairs, const decode::Translator& tr,
                 const cli::ParsedOptions& p) {
  std::vector<std::string> sources, targets;
  for (const Pair& pair : pairs) {  // a pair with a problem is not encoded: skipped
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
      std::cout << fixed(r.log_prob) << " " << fixed(r.log_prob / double(r.token_log_probs.size()));
    std::cout << '\n';
  }
  std::cout.flush();
  QKV_CHECK(std::cout.good(), IoError, "writing the scores (stdout) failed");
}

template <class Source>
void score_all(Source& source, const decode::Translator& tr, const cli::ParsedOptions& p,
               int64_t input_bytes) {
  cli::Progress progress("qkv score", "pair", cli::progress_interval(p), input_bytes, std::cerr);
  int64_t scored = 0, consumed = 0;
  const auto chunk = size_t(p.get<int64_t>("mini-batch")) * 10;
  // Also capped in bytes (pairs of up to 1 MiB a side), so a large input is never held
  // whole.
  constexpr size_t kMaxChunkBytes = size_t{64} << 20;
  std::vector<Pair> pairs, held;
  for (bool more = true; more;) {
    pairs.clear();
    Pair pair;
    size_t bytes = 0;
    // Only what is there: a slow writer gets each score before it sends the next pair.
    while (pairs.size() < chunk && bytes < kMaxChunkBytes && (pairs.empty() || source.ready()) &&
           (more = source.next(pair))) {
      bytes += pair.source.size() + pair.target.size();
      pairs.push_back(std::move(pair));
    }
    consumed += int64_t(bytes + 2 * pairs.size());  // and the separators
    if (pairs.empty()) continue;
    // Lines before the first with ` ||| ` wait (unscored: they have no pair), so input
    // in the wrong format is refused with nothing written rather than as empty lines.
    held.insert(held.end(), std::make_move_iterator(pairs.begin()),
                std::make_move_iterator(pairs.end()));
    if (!source.format_seen()) continue;
    score_chunk(held, tr, p);
    scored += int64_t(held.size());
    held.clear();
    progress.update(scored, consumed);
  }
  source.check_format();
  if (!held.empty()) score_chunk(held, tr, p);  // only unusable lines: empty lines, warned
}

int score(const cli::ParsedOptions& p) {
  QKV_CHECK(p.has("src") == p.has("tgt"), ConfigError, p.has("src") ? "--src" : "--tgt", " needs ",
            p.has("src") ? "--tgt" : "--src",
            " too (or give neither and pipe `source ||| translation` lines to stdin)");
  cli::apply_threads_option(p);
  const decode::Translator tr = load_translator(p.get<fs::path>("model"));
  if (p.has("src")) {
    FilePairs files(p.get<fs::path>("src"), p.get<fs::path>("tgt"));
    std::error_code ec;  // a size unknown (a pipe, a FIFO) only drops the share done
    const auto size = [&](const char* flag) {
      const auto s = fs::file_size(p.get<fs::path>(flag), ec);
      return ec ? int64_t{0} : int64_t(s);
    };
    const int64_t src = size("src"), tgt = size("tgt");
    score_all(files, tr, p, src > 0 && tgt > 0 ? src + tgt : 0);
  } else {
    StdinPairs in;
    score_all(in, tr, p, cli::stdin_file_size());
  }
  return kExitOk;
}

}  // namespace

int score_main(int argc, const char* const* argv) {
  return run_guarded("score", [&] {
    const cli::OptionSet options = score_options();
    const cli::ParsedOptions p = options.parse(argc, argv);
    if (p.help_requested()) {
      std::cout << options.format_help(
          "qkv", "score",
          "Scores translations with a model (forced decoding): for each `source ||| "
          "translation` line of stdin (or each line pair of --src/--tgt) writes the "
          "log-probability of the translation as two numbers, `<sum> <sum / tokens>`: the raw "
          "sum of the token log-probabilities and that sum divided by the target tokens "
          "(EOS counted). Neither is `translate --n-best`'s score, which divides by "
          "length^α (--normalize). A pair that cannot be scored gives an empty line and a "
          "warning (line numbers 1-based); input in which no line has ` ||| ` is refused.");
      return kExitOk;
    }
    return score(p);
  });
}

}  // namespace qkv::tool
