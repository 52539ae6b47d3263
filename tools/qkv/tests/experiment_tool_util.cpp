#include "experiment_tool_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "qkv/base/rng.h"

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

void write_corpus(const fs::path& src, const fs::path& tgt, int n, uint64_t seed) {
  static const std::vector<std::string> kSrc = {"red",  "blue", "dog",  "cat", "man",
                                                "girl", "runs", "sits", "big", "small"};
  static const std::vector<std::string> kTgt = {"rot",  "blau",  "hund",  "katze", "mann",
                                                "kind", "lauft", "sitzt", "gross", "klein"};
  Rng rng(seed);
  std::ofstream s(src), t(tgt);
  for (int i = 0; i < n; ++i) {
    const uint64_t len = 2 + rng.uniform_int(9);
    std::vector<uint64_t> w;
    for (uint64_t j = 0; j < len; ++j) w.push_back(rng.uniform_int(kSrc.size()));
    for (uint64_t j = 0; j < len; ++j) s << (j ? " " : "") << kSrc[w[j]];
    for (uint64_t j = 0; j < len; ++j) t << (j ? " " : "") << kTgt[w[len - 1 - j]];
    s << "\n";
    t << "\n";
  }
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
