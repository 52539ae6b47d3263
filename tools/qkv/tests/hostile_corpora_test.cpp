// Hostile corpora end to end: every kind of bad input (hostile_corpora_util.h writes
// them) fed to the built qkv's vocab, train, translate, score and eval, each pair held to
// the outcome in this table.
//
//   kind (bad lines)                   vocab     train     translate score eval-ref eval-stdin
//   StrayContinuationByte (3, 8)       skip-flag skip-flag skip      skip  error    error
//   OverlongEncoding (3, 6, 9)         skip-flag skip-flag skip      skip  error    error
//   TruncatedSequenceAtLineEnd (3, 7)  skip-flag skip-flag skip      skip  error    error
//   TruncatedSequenceAtFileEnd (12)    skip-flag skip-flag skip      skip  error    error
//   LoneSurrogates (3, 5, 9)           skip-flag skip-flag skip      skip  error    error
//   ImpossibleBytes (3, 6, 10)         skip-flag skip-flag skip      skip  error    error
//   Utf16File (1-13)                   skip-flag error     skip      skip  error    error
//   NulBytes (3, 11, 12)               skip-flag skip-flag skip      skip  error    error
//   ControlCharacters (3, 5, 7, 9, 11) skip-flag skip-flag skip      skip  error    error
//   CrlfMixedWithLf                    ok        ok        ok        ok    ok       ok
//   LoneCarriageReturns (3, 6)         skip-flag skip-flag skip      skip  error    error
//   ByteOrderMark                      ok        ok        ok        ok    ok       ok
//   WhitespaceOnlyLines (3, 5, 9)      skip      skip      skip      skip  ok       ok
//   EmptyLines (4, 7)                  skip      skip      skip      skip  error    ok
//   UnicodeSpaceOnlyLines (3, 5)       ok        skip      skip      skip  ok       ok
//   LineOverOneMebibyte (2)            skip      skip      skip      skip  error    error
//   LineOfOneMebibyte (2)              skip      skip      skip      skip  ok       ok
//   NoFinalNewline                     ok        ok        ok        ok    ok       ok
//   MismatchedLineCounts (12 vs 11)    ok        error     ok        error error    error
//   EmptyFile                          ok        error     ok        ok    error    error
//   TruncatedGzip                      error     error     error     error error    error
//   CorruptGzip                        error     error     error     error error    error
//   GzipWithBadChecksum                error     error     error     error error    error
//   DirectoryAsFile                    error     error     error     error error    error
//   MissingFile                        error     error     error     error error    n/a
//
// 25 kinds. What the outcomes mean (each checked in full below):
//   ok         exit 0 and the same result as the clean corpus (reads_as): the same
//              vocabulary bytes, model bytes, translations, scores, BLEU and chrF.
//   skip       exit 0; each bad line skipped and counted on stderr; translate and score
//              write an empty line for it and a warning naming its line number; every other
//              line's result is the clean corpus's.
//   skip-flag  without --skip-invalid an error naming FILE:LINE, what is wrong and
//              --skip-invalid; with it, skip.
//   error      exit 1 (2 for usage errors), one line "qkv CMD: error: ..." naming the file
//              (and FILE:LINE or stdin:LINE for a line at fault) and what is wrong; nothing
//              on stdout.
//   n/a        the shell opens stdin: a missing file never reaches qkv.
// eval-ref holds the hostile file as --ref against the clean lines on stdin; eval-stdin the
// other way round.
// The policy behind the table: a line that is not text (invalid UTF-8, control characters
// other than tab) or is over 1 MiB cannot be used; corpora reading it for learning (vocab,
// train) stop at it unless told to skip, the line-by-line commands (translate, score) keep
// its place with an empty line, and eval, which must pair every line, stops. A BOM at the
// start and CR before LF are not content and are removed. Blank lines carry nothing to
// learn or translate and are skipped and counted (eval scores them, but refuses an empty
// reference line as sacreBLEU does). A file that cannot be read (missing, directory,
// truncated or corrupt gzip; gzip on stdin) is an error, never a short corpus.
// Notes: Unicode spaces are valid text (the vocabulary reads them; NFKC leaves no token, so
// train, translate and score skip the line). The 1 MiB line is within the reader's limit:
// vocab leaves out lines over 16 KiB (SentencePiece took minutes on it), train, translate
// and score skip it by --max-length. Utf16File: every line is invalid, so train with
// --skip-invalid has no pair left, an error too. translate reads stdin, so it takes
// MissingFile as --model and DirectoryAsFile as stdin.
// Every run also must not die by a signal or a sanitizer report, and must end: a watchdog
// (timeout) turns a hang into a failure after 240 s.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "decode_tool_util.h"
#include "hostile_corpora_util.h"

namespace qkv {
namespace {

namespace fs = std::filesystem;

enum class Outcome { Ok, Skip, SkipFlag, Error, NotApplicable };

// One (kind, command) entry: the outcome, and what stderr must say (nullptr: the
// corpus's problem, e.g. "surrogate U+D800").
struct Cell {
  Outcome outcome;
  const char* says = nullptr;
};

Cell ok(const char* says = "") {
  return {Outcome::Ok, says};
}
Cell skip(const char* says = nullptr) {
  return {Outcome::Skip, says};
}
Cell skip_flag(const char* says) {
  return {Outcome::SkipFlag, says};
}
Cell error(const char* says = nullptr) {
  return {Outcome::Error, says};
}
Cell na() {
  return {Outcome::NotApplicable};
}

struct Kind {
  const char* name;
  hostile::Generator make;
  Cell vocab, train, translate, score, eval_ref, eval_stdin;
};

// The table above, with what each message must say.
const Kind kKinds[] = {
    {"StrayContinuationByte", hostile::stray_continuation_byte, skip_flag("2 invalid"),
     skip_flag("skipped 2 (2 invalid UTF-8"), skip(), skip(), error(), error()},
    {"OverlongEncoding", hostile::overlong_encoding, skip_flag("3 invalid"),
     skip_flag("skipped 3 (3 invalid UTF-8"), skip(), skip(), error(), error()},
    {"TruncatedSequenceAtLineEnd", hostile::truncated_sequence_at_line_end, skip_flag("2 invalid"),
     skip_flag("skipped 2 (2 invalid UTF-8"), skip(), skip(), error(), error()},
    {"TruncatedSequenceAtFileEnd", hostile::truncated_sequence_at_file_end, skip_flag("1 invalid"),
     skip_flag("skipped 1 (1 invalid UTF-8"), skip(), skip(), error(), error()},
    {"LoneSurrogates", hostile::lone_surrogates, skip_flag("3 invalid"),
     skip_flag("skipped 3 (3 invalid UTF-8"), skip(), skip(), error(), error()},
    {"ImpossibleBytes", hostile::impossible_bytes, skip_flag("3 invalid"),
     skip_flag("skipped 3 (3 invalid UTF-8"), skip(), skip(), error(), error()},
    {"Utf16File", hostile::utf16_file, skip_flag("13 lines, 0 kept, 13 invalid"),
     error("iconv -f UTF-16 -t UTF-8"), skip(), skip(), error("iconv"), error("iconv")},
    {"NulBytes", hostile::nul_bytes, skip_flag("3 invalid"),
     skip_flag("skipped 3 (3 invalid UTF-8"), skip(), skip(), error(), error()},
    {"ControlCharacters", hostile::control_characters, skip_flag("5 invalid"),
     skip_flag("skipped 5 (5 invalid UTF-8"), skip(), skip(), error(), error()},
    {"CrlfMixedWithLf", hostile::crlf_mixed_with_lf, ok("12 lines, 12 kept"),
     ok("kept 12, skipped none"), ok(), ok(), ok(), ok()},
    {"LoneCarriageReturns", hostile::lone_carriage_returns, skip_flag("2 invalid"),
     skip_flag("skipped 2 (2 invalid UTF-8"), skip(), skip(), error(), error()},
    {"ByteOrderMark", hostile::byte_order_mark, ok("12 lines, 12 kept"),
     ok("kept 12, skipped none"), ok(), ok(), ok(), ok()},
    {"WhitespaceOnlyLines", hostile::whitespace_only_lines, skip("left out: 3 blank lines"),
     skip("skipped 3 (3 empty)"), skip("empty line"), skip("empty source sentence"), ok(), ok()},
    {"EmptyLines", hostile::empty_lines, skip("left out: 2 blank lines"),
     skip("skipped 2 (2 empty)"), skip("empty line"), skip("empty source sentence"),
     error("empty reference line"), ok()},
    {"UnicodeSpaceOnlyLines", hostile::unicode_space_only_lines, ok("12 lines, 12 kept"),
     skip("skipped 2 (2 empty)"), skip("no subword tokens after normalisation"),
     skip("empty source sentence"), ok(), ok()},
    {"LineOverOneMebibyte", hostile::line_over_one_mebibyte, skip("1 too long"),
     skip("skipped 1 (1 over the line byte limit)"), skip(), skip(), error(), error()},
    {"LineOfOneMebibyte", hostile::line_of_one_mebibyte, skip("1 line over 16384 bytes"),
     skip("skipped 1 (1 longer than 100 tokens)"), skip("this model translates (--max-length)"),
     skip("more subword tokens than the model scores"), ok(), ok()},
    {"NoFinalNewline", hostile::no_final_newline, ok("12 lines, 12 kept"),
     ok("kept 12, skipped none"), ok(), ok(), ok(), ok()},
    {"MismatchedLineCounts", hostile::mismatched_line_counts, ok("12 lines, 12 kept"),
     error("has 12 lines but target partner.txt has 11 lines"), ok(),
     error("partner.txt ends after 11 lines"), error("has 12 lines, but stdin has 11"),
     error("has 11 lines, but stdin has 12")},
    {"EmptyFile", hostile::empty_file, ok("bad.txt is empty (0 lines)"),
     error("read 0 pairs: the corpus is empty"), ok(), ok(),
     error("has 0 lines, but stdin has 12 translations"), error("no translations on stdin")},
    {"TruncatedGzip", hostile::truncated_gzip, error("gzip data ends early"),
     error("gzip data ends early"), error("stdin is gzip-compressed"),
     error("gzip data ends early"), error("gzip data ends early"),
     error("stdin is gzip-compressed")},
    {"CorruptGzip", hostile::corrupt_gzip, error("invalid block type"), error("is corrupt"),
     error("stdin is gzip-compressed"), error("is corrupt"), error("is corrupt"),
     error("stdin is gzip-compressed")},
    {"GzipWithBadChecksum", hostile::gzip_with_bad_checksum, error("incorrect data check"),
     error("is corrupt"), error("stdin is gzip-compressed"), error("is corrupt"),
     error("is corrupt"), error("stdin is gzip-compressed")},
    {"DirectoryAsFile", hostile::directory_as_file, error("is a directory"),
     error("is a directory"), error("reading stdin failed: Is a directory"),
     error("is a directory"), error("is a directory"), error("reading stdin failed")},
    {"MissingFile", hostile::missing_file, error("No such file"), error("No such file"),
     error("no such model directory or file"), error("No such file"), error("no such file"), na()},
};

// Test names say the kind, not the bytes of the table row.
void PrintTo(const Kind& kind, std::ostream* os) {
  *os << kind.name;
}

// Flags of a tiny transformer trained for one update.
constexpr const char* kTinyTraining =
    "--vocab vocab.spm --after 1u --dim-emb 16 --dim-ffn 32 --heads 2 --enc-depth 1 "
    "--dec-depth 1 --mini-batch-words 512 --max-length 100 --warmup 5 --threads 2 "
    "--disp-freq 0 --valid-freq 0";

class HostileCorpora : public DecodeToolTest, public ::testing::WithParamInterface<Kind> {
 protected:
  void SetUp() override {
    DecodeToolTest::SetUp();
    make_model_dir("tf", models::ModelType::Transformer, models::AttentionKind::ScaledDot);
    corpus_ = GetParam().make(dir_);
    write_blanked();
  }

  // reads_as with the bad lines emptied: what the commands' results are compared with
  // (a blank line is skipped everywhere, as a bad line is).
  void write_blanked() {
    std::vector<std::string> lines = lines_of(slurp(dir_ / corpus_.reads_as));
    std::string text;
    for (size_t i = 0; i < lines.size(); ++i) {
      const bool bad = std::count(corpus_.bad_lines.begin(), corpus_.bad_lines.end(), i + 1) > 0;
      text += (bad ? std::string() : lines[i]) + "\n";
    }
    write("blanked.txt", text);
  }

  // `qkv ARGS < stdin_file` in the test directory under a watchdog; every run is checked
  // for crashes and hangs.
  Result run(const std::vector<std::string>& args, const std::string& stdin_file = "/dev/null") {
    std::string cmd = "cd '" + dir_.string() + "' && timeout -k 10 240 '" QKV_TOOL_PATH "'";
    for (const std::string& a : args) cmd += " '" + a + "'";
    cmd += " < '" + stdin_file + "' > stdout.txt 2> stderr.txt";
    const int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(dir_ / "stdout.txt");
    r.err = slurp(dir_ / "stderr.txt");
    const std::string what = "qkv " + args.front() + " on " + GetParam().name;
    EXPECT_NE(r.code, 124) << what << " hung (killed by the watchdog)";
    EXPECT_LT(r.code, 124) << what << " died by a signal: " << r.err;
    for (const char* crash : {"Sanitizer", "runtime error:", "terminate called", "Aborted"})
      EXPECT_FALSE(contains(r.err, crash)) << what << ": " << r.err.substr(0, 2000);
    return r;
  }

  // What a cell's messages must say.
  std::string says(const Cell& cell) const { return cell.says ? cell.says : corpus_.problem; }

  // FILE (or "stdin"), with ":LINE" when a line is at fault.
  std::string at(const std::string& file) const {
    if (corpus_.bad_lines.empty()) return file;
    return file + ":" + std::to_string(corpus_.bad_lines.front());
  }

  // An error: its exit code, one "qkv CMD: error:" line saying `what_is_wrong` and naming
  // `names`, and no output.
  void expect_error(const Result& r, const std::string& command, const std::string& what_is_wrong,
                    const std::string& names) {
    const std::string what = "qkv " + command + " on " + GetParam().name;
    EXPECT_TRUE(r.code == 1 || r.code == 2) << what << " exit " << r.code << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "qkv " + command + ": error: ")) << what << ": " << r.err;
    EXPECT_TRUE(contains(r.err, what_is_wrong)) << what << ": " << r.err;
    EXPECT_TRUE(contains(r.err, names)) << what << " does not name " << names << ": " << r.err;
    EXPECT_EQ(r.out, "") << what;
  }

  void check_vocab(const Cell& cell);
  void check_train(const Cell& cell);
  void check_line_by_line(const std::string& command, const Cell& cell);
  void check_eval(bool bad_on_stdin, const Cell& cell);

  hostile::Corpus corpus_;
};

void HostileCorpora::check_vocab(const Cell& cell) {
  auto args = [&](const std::string& file, const std::string& out) {
    return std::vector<std::string>{"vocab",    "--train-sets", file, corpus_.partner,
                                    "text.txt", "--vocab-size", "48", "-o",
                                    out};
  };
  if (cell.outcome == Outcome::Error || cell.outcome == Outcome::SkipFlag) {
    const Result r = run(args(corpus_.bad, "bad.spm"));
    if (cell.outcome == Outcome::Error)
      return expect_error(r, "vocab", says(cell), at(corpus_.bad));
    expect_error(r, "vocab", corpus_.problem, at(corpus_.bad));
    EXPECT_TRUE(contains(r.err, "--skip-invalid")) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "bad.spm"));
  }
  const Result ref = run(args("blanked.txt", "ref.spm"));
  ASSERT_EQ(ref.code, 0) << ref.err;
  std::vector<std::string> a = args(corpus_.bad, "bad.spm");
  if (cell.outcome == Outcome::SkipFlag) a.push_back("--skip-invalid");
  const Result r = run(a);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, cell.says)) << r.err;
  EXPECT_EQ(slurp(dir_ / "bad.spm"), slurp(dir_ / "ref.spm")) << "the vocabulary differs";
}

void HostileCorpora::check_train(const Cell& cell) {
  auto args = [&](const std::string& file, const std::string& model) {
    std::vector<std::string> a = {"train", "--model", model, "--train-sets", file, corpus_.partner};
    std::istringstream flags(kTinyTraining);
    for (std::string flag; flags >> flag;) a.push_back(flag);
    return a;
  };
  if (cell.outcome == Outcome::Error || cell.outcome == Outcome::SkipFlag) {
    const Result r = run(args(corpus_.bad, "m_bad"));
    if (cell.outcome == Outcome::Error)
      return expect_error(r, "train", says(cell), at(corpus_.bad));
    expect_error(r, "train", corpus_.problem, at(corpus_.bad));
    EXPECT_TRUE(contains(r.err, "--skip-invalid")) << r.err;
    fs::remove_all(dir_ / "m_bad");
  }
  const Result ref = run(args("blanked.txt", "m_ref"));
  ASSERT_EQ(ref.code, 0) << ref.err;
  std::vector<std::string> a = args(corpus_.bad, "m_bad");
  if (cell.outcome == Outcome::SkipFlag) a.push_back("--skip-invalid");
  const Result r = run(a);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, cell.says)) << r.err;
  EXPECT_EQ(slurp(dir_ / "m_bad" / "model.safetensors"),
            slurp(dir_ / "m_ref" / "model.safetensors"))
      << "training on the hostile corpus gave other parameters than on the clean one";
}

// translate (stdin) and score (--src/--tgt): one output line per input line, always.
void HostileCorpora::check_line_by_line(const std::string& command, const Cell& cell) {
  const bool translate = command == "translate";
  auto run_on = [&](const std::string& file) {
    if (translate)
      return fs::exists(dir_ / file) ? run({"translate", "--model", "tf", "--beam-size", "2"}, file)
                                     : run({"translate", "--model", file});
    return run({"score", "--model", "tf", "--src", file, "--tgt", corpus_.partner});
  };
  const Result r = run_on(corpus_.bad);
  if (cell.outcome == Outcome::Error) {
    const bool on_stdin = translate && fs::exists(dir_ / corpus_.bad);
    return expect_error(r, command, says(cell), on_stdin ? "stdin" : corpus_.bad);
  }
  const Result ref = run_on("blanked.txt");
  ASSERT_EQ(ref.code, 0) << ref.err;
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), corpus_.lines) << r.out.substr(0, 500);
  EXPECT_EQ(r.out, ref.out);  // a bad line's empty output line included
  const std::set<int64_t> bad(corpus_.bad_lines.begin(), corpus_.bad_lines.end());
  const std::vector<std::string> out = lines_of(r.out);
  for (int64_t line = 1; line <= corpus_.lines; ++line) {
    const std::string warning = "qkv " + command + ": warning: line " + std::to_string(line) + ": ";
    EXPECT_EQ(contains(r.err, warning), bad.count(line) > 0) << line << ": " << r.err;
    if (bad.count(line) > 0) {
      EXPECT_EQ(out[size_t(line - 1)], "") << line;
    }
  }
  EXPECT_TRUE(contains(r.err, says(cell))) << r.err;
  EXPECT_FALSE(contains(r.out, "\r")) << "a CR reached the output";
}

// eval with the hostile file as the reference, or as the translations on stdin.
void HostileCorpora::check_eval(bool bad_on_stdin, const Cell& cell) {
  if (cell.outcome == Outcome::NotApplicable) return;
  const Result r = bad_on_stdin ? run({"eval", "--ref", corpus_.clean}, corpus_.bad)
                                : run({"eval", "--ref", corpus_.bad}, corpus_.clean);
  if (cell.outcome == Outcome::Error)
    return expect_error(r, "eval", says(cell), at(bad_on_stdin ? "stdin" : corpus_.bad));
  // The same scores as the text read cleanly.
  const Result ref = bad_on_stdin ? run({"eval", "--ref", corpus_.clean}, corpus_.reads_as)
                                  : run({"eval", "--ref", corpus_.reads_as}, corpus_.clean);
  ASSERT_EQ(ref.code, 0) << ref.err;
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, ref.out);
  EXPECT_TRUE(contains(r.out, "BLEU|")) << r.out;
}

TEST_P(HostileCorpora, Vocab) {
  check_vocab(GetParam().vocab);
}
TEST_P(HostileCorpora, Train) {
  check_train(GetParam().train);
}
TEST_P(HostileCorpora, Translate) {
  check_line_by_line("translate", GetParam().translate);
}
TEST_P(HostileCorpora, Score) {
  check_line_by_line("score", GetParam().score);
}
TEST_P(HostileCorpora, EvalReference) {
  check_eval(false, GetParam().eval_ref);
}
TEST_P(HostileCorpora, EvalStdin) {
  check_eval(true, GetParam().eval_stdin);
}

TEST(HostileCorporaTable, HasAtLeastFifteenKindsWithDistinctNames) {
  std::set<std::string> names;
  for (const Kind& k : kKinds) names.insert(k.name);
  EXPECT_EQ(names.size(), std::size(kKinds));
  EXPECT_GE(names.size(), 15u);
}

INSTANTIATE_TEST_SUITE_P(Kinds, HostileCorpora, ::testing::ValuesIn(kKinds),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace qkv
