#include "experiment_tool_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "qkv/testing/tiny_corpus.h"

namespace qkv {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(prefix)) out.push_back(line);
  return out;
}

ToolResult run_qkv(const fs::path& dir, const std::vector<std::string>& args) {
  std::string cmd = "cd '" + dir.string() + "' && '" QKV_TOOL_PATH "'";
  for (const std::string& a : args) cmd += " '" + a + "'";
  cmd += " > stdout.txt 2> stderr.txt";
  const int status = std::system(cmd.c_str());
  ToolResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text(dir / "stdout.txt");
  r.err = read_text(dir / "stderr.txt");
  return r;
}

namespace {

// n pairs: 2..10 words from the first 10 of qkv_test_support's lexicon.
void write_corpus(const fs::path& src, const fs::path& tgt, int n, uint64_t seed) {
  qkv::testing::write_tiny_corpus(
      src, tgt, qkv::testing::tiny_corpus(n, seed, {.words = 10, .length_spread = 9}));
}

}  // namespace

fs::path make_corpus_dir(const std::string& tag) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("qkv_" + tag + "." + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_corpus(dir / "train.src", dir / "train.tgt", 300, 1);
  write_corpus(dir / "valid.src", dir / "valid.tgt", 20, 2);
  write_corpus(dir / "test.src", dir / "test.tgt", 30, 3);
  return dir;
}

std::vector<std::string> tiny_compare_args(const std::string& out) {
  return {"compare",
          "--train-sets",
          "train.src",
          "train.tgt",
          "--valid-sets",
          "valid.src",
          "valid.tgt",
          "--test-sets",
          "test.src",
          "test.tgt",
          "--variants",
          "rnn:none,rnn:additive,transformer",
          "--out",
          out,
          "--vocab-size",
          "40",
          "--dim-emb",
          "16",
          "--dim-rnn",
          "16",
          "--dim-ffn",
          "32",
          "--heads",
          "2",
          "--enc-depth",
          "1",
          "--dec-depth",
          "1",
          "--after",
          "30u",
          "--valid-freq",
          "15",
          "--mini-batch-words",
          "256",
          "--learn-rate",
          "0.003",
          "--warmup",
          "5",
          "--disp-freq",
          "10",
          "--beam-size",
          "2",
          "--threads",
          "2"};
}

}  // namespace qkv
