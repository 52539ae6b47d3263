// qkv eval: corpus BLEU and chrF of stdin's translations against references, as
// sacreBLEU's defaults compute them, optionally per source-length bucket.
#include <iostream>
#include <optional>

#include "command.h"
#include "decode_commands.h"
#include "decode_support.h"
#include "qkv/cli/options.h"
#include "qkv/eval/bootstrap.h"
#include "qkv/eval/by_length.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxLineBytes = int64_t{1} << 20;

cli::OptionSet eval_options() {
  cli::OptionSet o;
  o.add_list("ref", {},
             "Reference translations, one file per reference set, each as long as the input "
             "(`--ref a b` or `--ref a --ref b`).")
      .required()
      .metavar("FILE");
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

// `--ref a --ref b` -> `--ref a b`: the option parser takes a list once.
std::vector<std::string> merge_repeated_refs(int argc, const char* const* argv) {
  std::vector<std::string> out, refs;
  bool have_refs = false;
  size_t ref_at = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      for (; i < argc; ++i) out.emplace_back(argv[i]);
      break;
    }
    if (a != "--ref" && !a.starts_with("--ref=")) {
      out.push_back(a);
      continue;
    }
    if (!have_refs) ref_at = out.size();
    have_refs = true;
    if (a.starts_with("--ref=")) {
      refs.push_back(a.substr(6));
      continue;
    }
    for (; i + 1 < argc && (argv[i + 1][0] != '-' || argv[i + 1][1] == '\0'); ++i)
      refs.emplace_back(argv[i + 1]);
  }
  if (have_refs) {
    std::vector<std::string> flag = {"--ref"};
    flag.insert(flag.end(), refs.begin(), refs.end());
    out.insert(out.begin() + ptrdiff_t(ref_at), flag.begin(), flag.end());
  }
  return out;
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
              line.number, ": ", line_problem(line, kMaxLineBytes).value_or("unreadable line"),
              "; every line is needed to pair it with its translation: fix the file");
    lines.push_back(std::move(line.text));
  }
  return lines;
}

std::vector<std::string> read_stdin_lines() {
  LineReader reader(std::cin, kMaxLineBytes);
  std::vector<std::string> lines;
  data::Line line;
  while (reader.next(line)) {
    QKV_CHECK(line.status == data::LineStatus::Ok, ValueError, "stdin:", line.number, ": ",
              line_problem(line, kMaxLineBytes).value_or("unreadable line"),
              "; every translation is needed to pair it with its references");
    lines.push_back(std::move(line.text));
  }
  return lines;
}

int evaluate(const cli::ParsedOptions& p) {
  std::vector<std::vector<std::string>> refs;
  for (const std::string& f : p.get_list("ref")) refs.push_back(read_all_lines(f, "--ref"));
  std::vector<std::string> sources;
  if (p.has("by-length")) sources = read_all_lines(p.get<fs::path>("by-length"), "--by-length");
  const std::vector<std::string> hyps = read_stdin_lines();
  QKV_CHECK(!hyps.empty(), ValueError,
            "no translations on stdin: pipe the file to score, e.g. "
            "`qkv eval --ref test.de < hyps.de`");
  for (size_t k = 0; k < refs.size(); ++k)
    QKV_CHECK(refs[k].size() == hyps.size(), ValueError, "--ref ", p.get_list("ref")[k], " has ",
              refs[k].size(), " lines, but stdin has ", hyps.size(), " translations");
  QKV_CHECK(!p.has("by-length") || sources.size() == hyps.size(), ValueError, "--by-length ",
            p.get<fs::path>("by-length").string(), " has ", sources.size(),
            " lines, but stdin has ", hyps.size(), " translations");
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
    std::cout << "BLEU 95% CI = " << fixed(ci.low, 2) << "-" << fixed(ci.high, 2)
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
  return run_guarded("eval", [&] {
    const cli::OptionSet options = eval_options();
    const cli::ParsedOptions p = options.parse(merge_repeated_refs(argc, argv));
    if (p.help_requested()) {
      std::cout << options.format_help(
          "qkv", "eval",
          "Scores the translations on stdin (one per line) against references: corpus BLEU "
          "(sacreBLEU's defaults: 13a tokenisation, exp smoothing) and chrF2, each with its "
          "signature. qkv's own implementation, checked against sacreBLEU's test cases.");
      return kExitOk;
    }
    return evaluate(p);
  });
}

}  // namespace qkv::tool
