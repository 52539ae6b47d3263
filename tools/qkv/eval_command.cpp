// qkv eval: corpus BLEU and chrF of translations (a file, else stdin) against references, as
// sacreBLEU's defaults compute them, optionally per source-length bucket.
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <optional>

#include "command.h"
#include "decode_support.h"
#include "qkv/base/format.h"
#include "qkv/cli/options.h"
#include "qkv/eval/bootstrap.h"
#include "qkv/eval/by_length.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

cli::OptionSet eval_options() {
  cli::OptionSet o;
  o.add_list("ref", {},
             "A reference translation file, as long as the hypotheses; repeat the flag for "
             "several reference sets (`--ref a.de --ref b.de`).")
      .required()
      .repeatable()
      .metavar("FILE");
  o.allow_positionals("HYP",
                      "The translations to score, one per line (as sacreBLEU's -i); without "
                      "it they are read from stdin.");
  o.add_path("by-length", std::nullopt,
             "The source file: also print BLEU and chrF per source length (words: 1-10, "
             "11-20, ..., 50+) with sentence counts.")
      .metavar("SRC");
  o.add_int("bootstrap", 0,
            "Also print a 95% bootstrap confidence interval for BLEU (and for each "
            "--by-length bucket of at least 10 sentences) from this many resampled test "
            "sets, e.g. 1000 (0: none).")
      .range(0, 1000000)
      .metavar("N");
  return o;
}

// Every line of a file, for scoring: a line that cannot be read is an error (skipping it
// would pair the wrong sentences), named FILE:LINE.
std::vector<std::string> read_all_lines(const fs::path& path, std::string_view flag) {
  std::error_code ec;
  QKV_CHECK(fs::exists(path, ec), IoError, flag, " ", path.string(), ": no such file");
  QKV_CHECK(!fs::is_directory(path, ec), IoError, flag, " ", path.string(),
            " is a directory; expected a text file with one sentence per line");
  data::TextFileReader reader(
      path, {.invalid = data::InvalidLines::Skip, .max_line_bytes = kMaxLineBytes});
  std::vector<std::string> lines;
  data::Line line;
  while (reader.next(line)) {
    QKV_CHECK(line.status == data::LineStatus::Ok, ValueError, flag, " ", path.string(), ":",
              line.number, ": ",
              data::line_problem(line, kMaxLineBytes).value_or("unreadable line"),
              "; every line is needed to pair it with its translation: fix the file");
    lines.push_back(std::move(line.text));
  }
  return lines;
}

std::vector<std::string> read_stdin_lines() {
  data::StreamLineReader reader(std::cin, kMaxLineBytes);
  std::vector<std::string> lines;
  data::Line line;
  while (reader.next(line)) {
    QKV_CHECK(line.status == data::LineStatus::Ok, ValueError, "stdin:", line.number, ": ",
              data::line_problem(line, kMaxLineBytes).value_or("unreadable line"),
              "; every translation is needed to pair it with its references");
    lines.push_back(std::move(line.text));
  }
  return lines;
}

// Whether stdin carries data (a file or a pipe) rather than a terminal or /dev/null.
bool stdin_has_data() {
  struct stat st {};
  return fstat(STDIN_FILENO, &st) == 0 &&
         ((S_ISREG(st.st_mode) && st.st_size > 0) || S_ISFIFO(st.st_mode));
}

// The hypotheses: the one positional file, else stdin. Both, more than one file, or a
// terminal on stdin would leave it unclear what is scored: each is refused.
std::vector<std::string> read_hypotheses(const cli::ParsedOptions& p) {
  const std::vector<std::string>& files = p.positionals();
  QKV_CHECK(files.size() <= 1, ConfigError, "expected one hypothesis file, got ", files.size(),
            " (", files[0], ", ", files[1],
            ", ...); for several reference sets repeat the flag: --ref A --ref B");
  if (files.size() == 1) {
    QKV_CHECK(!stdin_has_data(), ConfigError, "the hypotheses are given twice: as the file ",
              files[0], " and on stdin; give one of them (note: --ref takes one file, so ",
              "`--ref A B` reads B as the hypotheses; write --ref A --ref B for two references)");
    return read_all_lines(files[0], "hypothesis file");
  }
  QKV_CHECK(!isatty(STDIN_FILENO), ConfigError,
            "no translations: give the hypothesis file (`qkv eval --ref test.de hyps.de`) or "
            "pipe it (`qkv eval --ref test.de < hyps.de`)");
  return read_stdin_lines();
}

int evaluate(const cli::ParsedOptions& p, std::span<const char* const> /*args*/) {
  std::vector<std::vector<std::string>> refs;
  for (const std::string& f : p.get_list("ref")) refs.push_back(read_all_lines(f, "--ref"));
  std::vector<std::string> sources;
  if (p.has("by-length")) sources = read_all_lines(p.get<fs::path>("by-length"), "--by-length");
  const std::vector<std::string> hyps = read_hypotheses(p);
  const std::string hyp_name = p.positionals().empty() ? "stdin" : p.positionals()[0];
  QKV_CHECK(!hyps.empty(), ValueError, "no translations ",
            p.positionals().empty() ? "on stdin" : "in " + hyp_name,
            ": give the file to score, e.g. `qkv eval --ref test.de hyps.de`");
  for (size_t k = 0; k < refs.size(); ++k)
    QKV_CHECK(refs[k].size() == hyps.size(), ValueError, "--ref ", p.get_list("ref")[k], " has ",
              refs[k].size(), " lines, but ", hyp_name, " has ", hyps.size(), " translations");
  QKV_CHECK(!p.has("by-length") || sources.size() == hyps.size(), ValueError, "--by-length ",
            p.get<fs::path>("by-length").string(), " has ", sources.size(), " lines, but ",
            hyp_name, " has ", hyps.size(), " translations");
  // BLEU has no reference length for such a line (sacreBLEU refuses it too); name it.
  for (size_t i = 0; i < hyps.size(); ++i) {
    bool any = false;
    for (const std::vector<std::string>& r : refs) any = any || !r[i].empty();
    QKV_CHECK(any, ValueError, "--ref ", p.get_list("ref")[0], ":", i + 1, ": empty reference line",
              refs.size() > 1 ? " (in every --ref file)" : "",
              "; every translation needs a reference: give one or drop the line from the test set");
  }

  std::optional<eval::BootstrapOptions> bootstrap;
  if (p.get<int64_t>("bootstrap") > 0)
    bootstrap = eval::BootstrapOptions{.samples = p.get<int64_t>("bootstrap")};
  std::cout << eval::corpus_bleu(hyps, refs).format(2, true) << "\n";
  if (bootstrap) {
    const eval::ConfidenceInterval ci = eval::bootstrap_bleu(hyps, refs, {}, *bootstrap);
    std::cout << "BLEU 95% CI = " << format_fixed(ci.low, 2) << "-" << format_fixed(ci.high, 2)
              << " (percentile bootstrap, " << bootstrap->samples << " resampled test sets)\n";
  }
  std::cout << eval::corpus_chrf(hyps, refs).format(2, true) << "\n";
  if (p.has("by-length"))
    std::cout << "\n"
              << eval::format_by_length(
                     eval::score_by_length(sources, hyps, refs, {.bootstrap = bootstrap}));
  return kExitOk;
}

}  // namespace

int eval_main(int argc, const char* const* argv) {
  return run_subcommand(
      {"eval", eval_options, evaluate,
       "Scores the translations in HYP (else on stdin; one per line) against references: corpus "
       "BLEU "
       "(sacreBLEU's defaults: 13a tokenisation, exp smoothing) and chrF2, each with its "
       "signature. qkv's own implementation, checked against sacreBLEU's test cases."},
      argc, argv);
}

}  // namespace qkv::tool
