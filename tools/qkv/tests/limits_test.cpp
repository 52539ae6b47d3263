// Limits, end to end: every size flag of every subcommand is range-checked with a message
// naming the flag and its range, and memory is estimated before large buffers are
// allocated, so that a model, a batch or a beam too large for the machine is a clean
// error naming the flags to reduce instead of a process the OOM killer ends.
//
// Memory limits are made hittable on any machine with QKV_MEMORY_LIMIT
// (qkv/base/memory.h): each memory test runs once under a limit the tiny defaults fit in
// (so the limit alone is not what fails), and once with one flag raised past it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "decode_tool_util.h"

namespace qkv {
namespace {

// Sets an environment variable for the child processes the fixture starts; restores the
// previous state when it goes out of scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_.empty())
      ::unsetenv(name_);
    else
      ::setenv(name_, old_.c_str(), 1);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
};

class LimitsTest : public DecodeToolTest {
 protected:
  void SetUp() override {
    DecodeToolTest::SetUp();
    std::string src, tgt;
    for (int i = 0; i < 60; ++i) {
      src += i % 2 ? "the red dog runs in the big park\n" : "a small cat sits on the blue ball\n";
      tgt += i % 2 ? "der rote hund lauft im grossen park\n"
                   : "eine kleine katze sitzt auf dem ball\n";
    }
    write("train.src", src);
    write("train.tgt", tgt);
    write("in.txt", src);
    std::string pairs;
    const std::string src3 =
        "a small cat sits on the blue ball and the red dog runs in the park "
        "with a man";
    const std::string tgt3 = "eine kleine katze sitzt auf dem ball und der rote hund lauft im park";
    for (int i = 0; i < 60; ++i) pairs += src3 + " ||| " + tgt3 + "\n";
    write("pairs.txt", pairs);
    make_model_dir("m", models::ModelType::Transformer, models::AttentionKind::ScaledDot);
  }

  // `qkv train` on train.{src,tgt} with the fixture's vocabulary and a tiny transformer.
  Result train(const std::string& dir, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"train",       "--model",   dir,           "--train-sets",
                                     "train.src",   "train.tgt", "--vocab",     "vocab.spm",
                                     "--dim-emb",   "16",        "--dim-ffn",   "32",
                                     "--heads",     "2",         "--enc-depth", "1",
                                     "--dec-depth", "1",         "--after",     "2u",
                                     "--threads",   "1",         "--disp-freq", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    return qkv(args);
  }
};

struct RangeCase {
  std::vector<std::string> args;  // a command and its required flags, then the bad one
  std::string expected;           // "--flag VALUE: must be in [min, max]"
};

// Each size flag out of its range, on both sides where it has two: a usage error (exit 2)
// on one line naming the flag, the value and the range, before anything else happens.
TEST_F(LimitsTest, EverySizeFlagIsRangeCheckedWithItsRangeInTheMessage) {
  const std::vector<std::string> tr = {"translate", "--model", "m"};
  const std::vector<std::string> at = {"attend", "--model", "m"};
  const std::vector<std::string> sc = {"score", "--model", "m"};
  const std::vector<std::string> tn = {"train",        "--model",   "t",
                                       "--train-sets", "train.src", "train.tgt"};
  const std::vector<std::string> vo = {"vocab", "--train-sets", "train.src", "-o", "v.spm"};
  const std::vector<std::string> cm = {"compare",     "--train-sets", "train.src", "train.tgt",
                                       "--test-sets", "train.src",    "train.tgt"};
  const std::vector<std::string> dm = {"demo"};
  const auto with = [](std::vector<std::string> base, std::vector<std::string> extra) {
    base.insert(base.end(), extra.begin(), extra.end());
    return base;
  };
  const std::vector<RangeCase> cases = {
      {with(tr, {"--beam-size", "0"}), "--beam-size 0: must be in [1, 1000]"},
      {with(tr, {"--beam-size", "1001"}), "--beam-size 1001: must be in [1, 1000]"},
      {with(tr, {"--n-best", "0"}), "--n-best 0: must be in [1, 1000]"},
      {with(tr, {"--max-length", "0"}), "--max-length 0: must be in [1, 10000000]"},
      {with(tr, {"--max-length-factor", "-1"}), "--max-length-factor -1: must be in [0, 1000]"},
      {with(tr, {"--max-length-factor", "1e9"}), "--max-length-factor 1e9: must be in [0, 1000]"},
      {with(tr, {"--mini-batch", "0"}), "--mini-batch 0: must be in [1, 100000]"},
      {with(tr, {"--mini-batch", "100001"}), "--mini-batch 100001: must be in [1, 100000]"},
      {with(tr, {"--maxi-batch", "10001"}), "--maxi-batch 10001: must be in [1, 10000]"},
      {with(tr, {"--threads", "257"}), "--threads 257: must be in [0, 256]"},
      {with(tr, {"--threads", "-1"}), "--threads -1: must be in [0, 256]"},
      {with(tr, {"--alignment-layer", "-2"}), "--alignment-layer -2: must be in [-1, 1000]"},
      {with(tr, {"--alignment-head", "1001"}), "--alignment-head 1001: must be in [-1, 1000]"},
      {with(at, {"--beam-size", "0"}), "--beam-size 0: must be in [1, 1000]"},
      {with(at, {"--max-length", "1001"}), "--max-length 1001: must be in [1, 1000]"},
      {with(at, {"--max-length-factor", "4"}), "--max-length-factor 4: must be in [0, 3]"},
      {with(at, {"--width", "100001"}), "--width 100001: must be in [0, 100000]"},
      {with(at, {"--threads", "257"}), "--threads 257: must be in [0, 256]"},
      {with(sc, {"--max-length", "0"}), "--max-length 0: must be in [1, 10000000]"},
      {with(sc, {"--mini-batch", "0"}), "--mini-batch 0: must be in [1, 100000]"},
      {with(sc, {"--threads", "1000"}), "--threads 1000: must be in [0, 256]"},
      {with(tn, {"--mini-batch-words", "1"}), "--mini-batch-words 1: must be in [2, 1000000000]"},
      {with(tn, {"--mini-batch-words", "2000000000"}),
       "--mini-batch-words 2000000000: must be in [2, 1000000000]"},
      {with(tn, {"--max-length", "0"}), "--max-length 0: must be in [1, 100000]"},
      {with(tn, {"--max-length", "100001"}), "--max-length 100001: must be in [1, 100000]"},
      {with(tn, {"--vocab-size", "4"}), "--vocab-size 4: must be in [5, 1000000]"},
      {with(tn, {"--dim-emb", "0"}), "--dim-emb 0: must be in [1, 65536]"},
      {with(tn, {"--dim-emb", "65537"}), "--dim-emb 65537: must be in [1, 65536]"},
      {with(tn, {"--dim-rnn", "65537"}), "--dim-rnn 65537: must be in [1, 65536]"},
      {with(tn, {"--dim-ffn", "1000001"}), "--dim-ffn 1000001: must be in [1, 1000000]"},
      {with(tn, {"--heads", "0"}), "--heads 0: must be in [1, 1024]"},
      {with(tn, {"--enc-depth", "65"}), "--enc-depth 65: must be in [1, 64]"},
      {with(tn, {"--dec-depth", "0"}), "--dec-depth 0: must be in [1, 64]"},
      {with(tn, {"--threads", "257"}), "--threads 257: must be in [0, 256]"},
      {with(tn, {"--early-stopping", "-1"}), "--early-stopping -1: must be in [0, 1000000000]"},
      {with(vo, {"--vocab-size", "4"}), "--vocab-size 4: must be in [5, 1000000]"},
      {with(vo, {"--vocab-size", "1000001"}), "--vocab-size 1000001: must be in [5, 1000000]"},
      {with(vo, {"--max-sentences", "-1"}), "--max-sentences -1: must be in [0, 1000000000000]"},
      {with(cm, {"--beam-size", "0"}), "--beam-size 0: must be in [1, 1000]"},
      {with(cm, {"--mini-batch", "100001"}), "--mini-batch 100001: must be in [1, 100000]"},
      {with(cm, {"--samples", "101"}), "--samples 101: must be in [0, 100]"},
      {with(dm, {"--beam-size", "1001"}), "--beam-size 1001: must be in [1, 1000]"},
      {with(dm, {"--threads", "257"}), "--threads 257: must be in [0, 256]"},
      {with(dm, {"--minutes", "0"}), "--minutes 0: must be in [0.1, 100000]"},
  };
  for (const RangeCase& c : cases) {
    const Result r = qkv(c.args);
    const std::string command = "qkv " + c.args[0] + ": error: ";
    EXPECT_EQ(r.code, 2) << c.expected << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, command + c.expected)) << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << "one line: " << r.err;
  }
}

// `qkv train --dim-emb 65536 --dim-ffn 1000000`: 1.3e12 parameters, 21 TB with gradients
// and Adam's moments. Refused before the vocabulary or the corpus is read, naming the
// flags; nothing is written.
TEST_F(LimitsTest, AModelTooLargeForMemoryIsRefusedBeforeAnyWork) {
  const Result r = qkv({"train", "--model", "big", "--train-sets", "train.src", "train.tgt",
                        "--dim-emb", "65536", "--dim-ffn", "1000000", "--heads", "8"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "qkv train: error: training this model (")) << r.err;
  EXPECT_TRUE(contains(r.err, "TiB, more than the")) << r.err;
  for (const char* flag : {"--dim-emb", "--dim-ffn", "--enc-depth", "--vocab-size"})
    EXPECT_TRUE(contains(r.err, flag)) << r.err;
  EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "big"));
}

// `--mini-batch-words 1e9`: the whole corpus in one batch. Under a limit the default
// batches fit in, the largest batch's activation estimate is what is refused, before the
// model is built or the first update runs.
TEST_F(LimitsTest, ABatchTooLargeForMemoryIsRefusedNamingMiniBatchWords) {
  const ScopedEnv limit("QKV_MEMORY_LIMIT", "3M");
  const Result fits = train("small", {"--mini-batch-words", "200", "--max-length", "100"});
  EXPECT_EQ(fits.code, 0) << fits.err;
  const Result r = train("huge", {"--mini-batch-words", "1000000000", "--max-length", "100"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "qkv train: error: training on the largest batch (60 sentences"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "qkv may use (QKV_MEMORY_LIMIT); reduce --mini-batch-words"))
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "huge" / "model.safetensors"));
}

// A beam of 1000 over 60 sentences at once: its rows' log-probabilities and decoder state
// are refused before the search starts, naming the decoding flags; the defaults decode.
TEST_F(LimitsTest, ABeamTooLargeForMemoryIsRefusedNamingTheDecodingFlags) {
  const ScopedEnv limit("QKV_MEMORY_LIMIT", "16M");
  const Result fits = qkv({"translate", "--model", "m"}, "in.txt");
  EXPECT_EQ(fits.code, 0) << fits.err;
  EXPECT_EQ(lines_of(fits.out).size(), 60u);
  const Result r =
      qkv({"translate", "--model", "m", "--beam-size", "1000", "--mini-batch", "100000"}, "in.txt");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "qkv translate: error: beam search of 60 sentences (beam size 1000"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "reduce --beam-size, --mini-batch, --max-length-factor")) << r.err;
  const Result a = qkv({"attend", "--model", "m", "--beam-size", "1000"}, "in.txt");
  EXPECT_EQ(a.code, 1) << a.err;
  EXPECT_TRUE(contains(a.err, "qkv attend: error: beam search of 1 sentences (beam size 1000"))
      << a.err;
}

// Scoring forced-decodes a whole mini-batch at once: its logits are estimated first.
TEST_F(LimitsTest, AScoringBatchTooLargeForMemoryIsRefusedNamingMiniBatch) {
  const ScopedEnv limit("QKV_MEMORY_LIMIT", "1M");
  const Result fits = qkv({"score", "--model", "m", "--mini-batch", "4"}, "pairs.txt");
  EXPECT_EQ(fits.code, 0) << fits.err;
  EXPECT_EQ(lines_of(fits.out).size(), 60u);
  const Result r = qkv({"score", "--model", "m", "--mini-batch", "100000"}, "pairs.txt");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "qkv score: error: scoring 60 pairs")) << r.err;
  EXPECT_TRUE(contains(r.err, "reduce --mini-batch or --max-length")) << r.err;
}

// A malformed QKV_MEMORY_LIMIT is a usage error naming the variable.
TEST_F(LimitsTest, AMalformedMemoryLimitIsAUsageError) {
  const ScopedEnv limit("QKV_MEMORY_LIMIT", "lots");
  const Result r = qkv({"translate", "--model", "m"}, "in.txt");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "QKV_MEMORY_LIMIT='lots' is not a memory size")) << r.err;
}

// An input line of thousands of tokens in `attend` (a heatmap of thousands × thousands of
// cells): skipped with a warning naming its line, its token count and the limit, and an
// empty output line; the other lines are shown.
TEST_F(LimitsTest, AttendSkipsLinesLongerThanItsLimitWithAWarning) {
  std::string long_line;
  for (int i = 0; i < 3000; ++i) long_line += i % 2 ? "dog " : "park ";
  write("attend.txt", "the red dog\n" + long_line + "\na small cat\n");
  const Result r = qkv({"attend", "--model", "m", "--max-length", "40"}, "attend.txt");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "qkv attend: warning: line 2: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "subword tokens, more than the 40 attend shows (--max-length)"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "showed the attention of 2 sentences")) << r.err;
  // The model covers 64 positions: the default --max-length is capped by it, and says so.
  const Result capped = qkv({"attend", "--model", "m"}, "attend.txt");
  EXPECT_EQ(capped.code, 0) << capped.err;
  EXPECT_TRUE(contains(capped.err,
                       "more than the 63 attend shows (--max-length, capped by the "
                       "model's max_positions 64)"))
      << capped.err;
}

}  // namespace
}  // namespace qkv
