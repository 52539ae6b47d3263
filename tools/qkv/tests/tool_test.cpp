// The qkv program end to end: it runs the built executable on tiny generated corpora in
// a temporary directory and checks exit codes, messages and the files it writes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "qkv/data/vocab.h"
#include "qkv/testing/tiny_corpus.h"
#include "qkv/train/checkpoint.h"

namespace qkv {
namespace {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `qkv ARGS` in `dir`, stdout and stderr captured. Arguments are single-quoted.
Result qkv(const fs::path& dir, const std::vector<std::string>& args) {
  std::string cmd = "cd '" + dir.string() + "' && '" QKV_TOOL_PATH "'";
  for (const std::string& a : args) cmd += " '" + a + "'";
  cmd += " > stdout.txt 2> stderr.txt";
  const int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(dir / "stdout.txt");
  r.err = slurp(dir / "stderr.txt");
  return r;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// n pairs: 2..6 words of qkv_test_support's tiny task.
void write_corpus(const fs::path& src, const fs::path& tgt, int n, uint64_t seed) {
  qkv::testing::write_tiny_corpus(src, tgt, qkv::testing::tiny_corpus(n, seed));
}

// A directory with train.{src,tgt} (200 pairs) and valid.{src,tgt} (10 pairs).
class ToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("qkv_tool_test." + std::string(info->name()) + "." + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_corpus(dir_ / "train.src", dir_ / "train.tgt", 200, 1);
    write_corpus(dir_ / "valid.src", dir_ / "valid.tgt", 10, 2);
  }
  void TearDown() override {
    std::error_code ignored;
    if (!HasFailure()) fs::remove_all(dir_, ignored);
  }

  // Flags of a tiny, fast transformer.
  static std::vector<std::string> tiny(std::vector<std::string> args) {
    for (const char* a :
         {"--dim-emb",   "16", "--dim-ffn",          "32", "--heads",      "2",  "--enc-depth", "1",
          "--dec-depth", "1",  "--mini-batch-words", "64", "--max-length", "20", "--warmup",    "5",
          "--threads",   "2",  "--disp-freq",        "5"})
      args.emplace_back(a);
    return args;
  }

  fs::path dir_;
};

TEST_F(ToolTest, VocabThenTrainWritesAModelDirectoryThatLoads) {
  const Result v = qkv(dir_, {"vocab", "--train-sets", "train.src", "train.tgt", "--vocab-size",
                              "40", "-o", "joint.spm"});
  ASSERT_EQ(v.code, 0) << v.err;
  EXPECT_TRUE(fs::exists(dir_ / "joint.spm"));
  EXPECT_TRUE(contains(v.err, "40-piece vocabulary on 400 sentences")) << v.err;

  const Result t =
      qkv(dir_, tiny({"train", "--model", "model", "--train-sets", "train.src", "train.tgt",
                      "--vocab", "joint.spm", "--after", "20u", "--valid-sets", "valid.src",
                      "valid.tgt", "--valid-freq", "10"}));
  ASSERT_EQ(t.code, 0) << t.err;
  // Corpus statistics first, then progress lines and validations.
  EXPECT_TRUE(contains(t.err, "training data: read 200 pairs, kept ")) << t.err;
  EXPECT_TRUE(contains(t.err, "longer than 20 tokens")) << t.err;
  EXPECT_TRUE(contains(t.err, "validation data: read 10 pairs")) << t.err;
  EXPECT_TRUE(contains(t.err, "ep 1 up 5: loss ")) << t.err;
  EXPECT_TRUE(contains(t.err, "tokens/s, lr ")) << t.err;
  EXPECT_TRUE(contains(t.err, "ETA ")) << t.err;
  EXPECT_TRUE(contains(t.err, "validation 2 at up 20: cross-entropy ")) << t.err;
  for (const char* f : {"model.safetensors", "model.best.safetensors", "vocab.spm",
                        "train_state.safetensors", "train.yml"})
    EXPECT_TRUE(fs::exists(dir_ / "model" / f)) << f;
  const train::LoadedModel m = train::load_model(dir_ / "model" / "model.safetensors");
  EXPECT_EQ(m.info.update, 20);
  EXPECT_EQ(m.info.config.dim_emb, 16);
  EXPECT_EQ(m.info.config.vocab_size, 40);
  EXPECT_EQ(slurp(dir_ / "model" / "vocab.spm"), slurp(dir_ / "joint.spm"));
  // Both model files record the vocabulary they were trained with.
  const std::string fingerprint = data::Vocab::load(dir_ / "joint.spm").fingerprint();
  for (const char* f : {"model.safetensors", "model.best.safetensors"}) {
    const auto stamp = train::read_model_info(dir_ / "model" / f).vocab_stamp;
    ASSERT_TRUE(stamp.has_value()) << f;
    EXPECT_EQ(stamp->fingerprint, fingerprint) << f;
    EXPECT_EQ(stamp->size, 40) << f;
  }
}

TEST_F(ToolTest, TrainTrainsAVocabularyWhenNoneIsGivenAndResumes) {
  const std::vector<std::string> base = {
      "train",        "--model", "m",      "--train-sets", "train.src", "train.tgt",
      "--vocab-size", "40",      "--type", "rnn",          "--dim-rnn", "16"};
  std::vector<std::string> first = tiny(base);
  first.insert(first.end(), {"--after", "4u"});
  const Result a = qkv(dir_, first);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_TRUE(contains(a.err, "40-piece vocabulary")) << a.err;
  EXPECT_EQ(train::load_model(dir_ / "m" / "model.safetensors").info.config.type,
            models::ModelType::Rnn);

  // Again without --resume: refused, nothing overwritten.
  const Result again = qkv(dir_, first);
  EXPECT_EQ(again.code, 2);
  EXPECT_TRUE(contains(again.err, "qkv train: error: --model m already holds a training run"))
      << again.err;
  EXPECT_TRUE(contains(again.err, "--resume")) << again.err;

  std::vector<std::string> more = tiny(base);
  more.insert(more.end(), {"--after", "8u", "--resume"});
  const Result b = qkv(dir_, more);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_TRUE(contains(b.err, "resumed at update 4")) << b.err;
  EXPECT_EQ(train::load_model(dir_ / "m" / "model.safetensors").info.update, 8);

  // Resuming with a different architecture is refused, naming the directory.
  std::vector<std::string> other = tiny(base);
  other.insert(other.end(), {"--after", "9u", "--resume", "--dim-rnn", "24"});
  other.erase(other.begin() + 11);  // the first --dim-rnn 16
  other.erase(other.begin() + 10);
  const Result c = qkv(dir_, other);
  EXPECT_EQ(c.code, 2) << c.err;
  EXPECT_TRUE(contains(c.err, "--resume: m holds the model")) << c.err;
}

TEST_F(ToolTest, HelpAndUnknownCommands) {
  const Result h = qkv(dir_, {"train", "--help"});
  EXPECT_EQ(h.code, 0);
  for (const char* flag :
       {"--type",         "--attention",   "--dim-emb",    "--dim-rnn",   "--enc-depth",
        "--dec-depth",    "--heads",       "--dim-ffn",    "--dropout",   "--label-smoothing",
        "--learn-rate",   "--lr-schedule", "--warmup",     "--clip-norm", "--mini-batch-words",
        "--max-length",   "--valid-sets",  "--valid-freq", "--save-freq", "--early-stopping",
        "--after",        "--seed",        "--threads",    "--resume",    "--vocab-size",
        "--skip-invalid", "--config"})
    EXPECT_TRUE(contains(h.out, flag)) << flag;
  EXPECT_EQ(qkv(dir_, {"--help"}).code, 0);
  EXPECT_EQ(qkv(dir_, {"vocab", "--help"}).code, 0);
  const Result u = qkv(dir_, {"frobnicate"});
  EXPECT_EQ(u.code, 2);
  EXPECT_TRUE(contains(u.err, "unknown command 'frobnicate'")) << u.err;
  EXPECT_EQ(qkv(dir_, {}).code, 2);
}

TEST_F(ToolTest, CommandListIsAlignedAndHelpCommandShowsTheCommandsFlags) {
  const Result usage = qkv(dir_, {"--help"});
  ASSERT_EQ(usage.code, 0);
  // Every summary starts in the same column, whatever the command name's length.
  std::istringstream lines(usage.out);
  std::string line;
  std::set<size_t> columns;
  int commands = 0;
  bool in_list = false;
  while (std::getline(lines, line)) {
    if (line == "commands:")
      in_list = true;
    else if (in_list && line.empty())
      break;
    else if (in_list) {
      const size_t name_end = line.find(' ', 2);
      columns.insert(line.find_first_not_of(' ', name_end));
      ++commands;
    }
  }
  EXPECT_EQ(commands, 11) << usage.out;
  EXPECT_EQ(columns.size(), 1u) << usage.out;
  // `qkv help translate` is `qkv translate --help`, not the top-level usage.
  const Result help = qkv(dir_, {"help", "translate"});
  EXPECT_EQ(help.code, 0);
  EXPECT_EQ(help.out, qkv(dir_, {"translate", "--help"}).out);
  EXPECT_TRUE(contains(help.out, "--beam-size")) << help.out;
  EXPECT_EQ(qkv(dir_, {"help"}).out, usage.out);
  const Result bad_help = qkv(dir_, {"help", "tranlsate"});
  EXPECT_EQ(bad_help.code, 2);
  EXPECT_TRUE(contains(bad_help.err, "did you mean 'translate'?")) << bad_help.err;
  // A misspelled command gets a suggestion, as a misspelled flag does.
  const Result typo = qkv(dir_, {"trian"});
  EXPECT_EQ(typo.code, 2);
  EXPECT_TRUE(contains(typo.err, "unknown command 'trian'; did you mean 'train'?")) << typo.err;
  const Result far = qkv(dir_, {"frobnicate"});
  EXPECT_FALSE(contains(far.err, "did you mean")) << far.err;
}

TEST_F(ToolTest, BadFlagsAreUsageErrorsNamingTheFlag) {
  const std::vector<std::string> ok = {"train",        "--model",   "m",
                                       "--train-sets", "train.src", "train.tgt"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = ok;
    args.insert(args.end(), extra.begin(), extra.end());
    return qkv(dir_, args);
  };
  const struct {
    std::vector<std::string> extra;
    std::string expected;
  } cases[] = {
      {{"--dim-embd", "16"}, "unknown flag --dim-embd; did you mean --dim-emb?"},
      {{"--dim-emb", "abc"}, "--dim-emb: 'abc' is not an integer"},
      {{"--type", "lstm"}, "--type lstm: must be one of"},
      {{"--after", "5x"}, "--after"},
      {{"--dropout", "1.5"}, "--dropout 1.5"},
      {{"--heads", "3"}, "--heads 3 must divide --dim-emb 256"},
      {{"--attention", "additive"}, "--attention additive: the transformer always uses"},
      {{"--lr-schedule", "inv-sqrt", "--warmup", "0"}, "--warmup"},
      {{"--valid-sets", "valid.src"}, "--valid-sets takes two files"},
  };
  for (const auto& c : cases) {
    const Result r = with(c.extra);
    EXPECT_EQ(r.code, 2) << c.expected << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "qkv train: error: ")) << r.err;
    EXPECT_TRUE(contains(r.err, c.expected)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
  const Result missing = qkv(dir_, {"train", "--model", "m"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_TRUE(contains(missing.err, "--train-sets")) << missing.err;
  const Result vocab = qkv(dir_, {"vocab", "--train-sets", "train.src"});
  EXPECT_EQ(vocab.code, 2);
  EXPECT_TRUE(contains(vocab.err, "qkv vocab: error: ")) << vocab.err;
  EXPECT_TRUE(contains(vocab.err, "--output")) << vocab.err;
  EXPECT_FALSE(fs::exists(dir_ / "m" / "model.safetensors"));
}

TEST_F(ToolTest, BadFilesAreRuntimeErrorsNamingTheFile) {
  const Result missing = qkv(dir_, tiny({"train", "--model", "m", "--train-sets", "nope.src",
                                         "train.tgt", "--vocab-size", "40"}));
  EXPECT_EQ(missing.code, 1) << missing.err;
  EXPECT_TRUE(contains(missing.err, "qkv train: error: ")) << missing.err;
  EXPECT_TRUE(contains(missing.err, "nope.src")) << missing.err;

  write_corpus(dir_ / "short.tgt", dir_ / "short.src.unused", 150, 3);
  const Result counts = qkv(dir_, {"vocab", "--train-sets", "train.src", "train.tgt",
                                   "--vocab-size", "40", "-o", "v.spm"});
  ASSERT_EQ(counts.code, 0) << counts.err;
  const Result mismatch = qkv(dir_, tiny({"train", "--model", "m2", "--train-sets", "train.src",
                                          "short.tgt", "--vocab", "v.spm"}));
  EXPECT_EQ(mismatch.code, 1) << mismatch.err;
  EXPECT_TRUE(contains(mismatch.err, "train.src")) << mismatch.err;
  EXPECT_TRUE(contains(mismatch.err, "short.tgt")) << mismatch.err;
  EXPECT_TRUE(contains(mismatch.err, "200")) << mismatch.err;
  EXPECT_TRUE(contains(mismatch.err, "150")) << mismatch.err;

  const Result no_vocab = qkv(dir_, tiny({"train", "--model", "m3", "--train-sets", "train.src",
                                          "train.tgt", "--vocab", "absent.spm"}));
  EXPECT_EQ(no_vocab.code, 1) << no_vocab.err;
  EXPECT_TRUE(contains(no_vocab.err, "absent.spm")) << no_vocab.err;

  std::ofstream(dir_ / "bad.src") << "fine\n\xff\xfe broken\n";
  std::ofstream(dir_ / "bad.tgt") << "gut\nkaputt\n";
  const Result utf8 = qkv(dir_, tiny({"train", "--model", "m4", "--train-sets", "bad.src",
                                      "bad.tgt", "--vocab", "v.spm"}));
  EXPECT_EQ(utf8.code, 1) << utf8.err;
  EXPECT_TRUE(contains(utf8.err, "bad.src:2")) << utf8.err;
  EXPECT_TRUE(contains(utf8.err, "--skip-invalid")) << utf8.err;
}

TEST_F(ToolTest, ConfigFileKeysAreTheFlagNames) {
  std::ofstream(dir_ / "cfg.yml") << "train-sets: [train.src, train.tgt]\nvocab-size: 40\n"
                                     "dim-emb: 16\ndim-ffn: 32\nheads: 2\nenc-depth: 1\n"
                                     "dec-depth: 1\nafter: 3u\nmini-batch-words: 64\n"
                                     "max-length: 20\nwarmup: 2\n";
  const Result r = qkv(dir_, {"train", "-c", "cfg.yml", "--model", "m"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(train::load_model(dir_ / "m" / "model.safetensors").info.update, 3);
  std::ofstream(dir_ / "bad.yml") << "dim-embd: 16\n";
  const Result bad = qkv(
      dir_, {"train", "-c", "bad.yml", "--model", "m5", "--train-sets", "train.src", "train.tgt"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(contains(bad.err, "bad.yml")) << bad.err;
  EXPECT_TRUE(contains(bad.err, "dim-embd")) << bad.err;
}

}  // namespace
}  // namespace qkv
