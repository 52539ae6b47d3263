#include "decode_tool_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "qkv/data/vocab.h"
#include "qkv/decode/vocab_stamp.h"
#include "qkv/models/seq2seq.h"
#include "qkv/train/checkpoint.h"

namespace qkv {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> split(const std::string& text, const std::string& sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t at; (at = text.find(sep, start)) != std::string::npos; start = at + sep.size())
    out.push_back(text.substr(start, at - start));
  out.push_back(text.substr(start));
  return out;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t words_in(const std::string& text) {
  std::istringstream in(text);
  size_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

void DecodeToolTest::SetUp() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  // Parameterised names ("Vocab/Utf16File") hold a '/': flatten them, so that tests
  // running in parallel never share (and race on creating) a parent directory.
  std::string name = info->name();
  std::replace(name.begin(), name.end(), '/', '.');
  dir_ = fs::path(::testing::TempDir()) /
         ("qkv_decode_tool_test." + name + "." + std::to_string(::getpid()));
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  {
    std::ofstream text(dir_ / "text.txt");
    for (int i = 0; i < 40; ++i)
      text << "the red dog runs in the big park\na small cat sits on the blue ball\n"
           << "a man and a girl walk with the brown horse\n"
           << "der rote hund lauft im grossen park\neine kleine katze sitzt auf dem ball\n"
           << "ein mann und ein madchen gehen mit dem braunen pferd\n";
  }
  data::train_vocab({dir_ / "text.txt"}, kVocabSize, dir_ / "vocab.spm");
}

void DecodeToolTest::TearDown() {
  std::error_code ignored;
  if (!HasFailure()) fs::remove_all(dir_, ignored);
}

void DecodeToolTest::make_model_dir(const std::string& name, models::ModelType type,
                                    models::AttentionKind attention) {
  const models::ModelConfig c{.type = type,
                              .attention = attention,
                              .cell = models::CellType::Gru,
                              .vocab_size = kVocabSize,
                              .dim_emb = 16,
                              .dim_rnn = 12,
                              .enc_depth = 1,
                              .dec_depth = 2,
                              .heads = 2,
                              .dim_ffn = 24,
                              .max_positions = 64};
  const auto model = models::make_model(c, 5);
  fs::create_directories(dir_ / name);
  fs::copy_file(dir_ / "vocab.spm", dir_ / name / train::kVocabFile);
  // Stamped with its vocabulary, as `qkv train` writes model files.
  train::save_model(*model, dir_ / name / train::kModelFile, train::kVocabFile, 0,
                    decode::vocab_stamp(data::Vocab::load(dir_ / "vocab.spm")));
}

Result DecodeToolTest::qkv(const std::vector<std::string>& args, const std::string& stdin_file) {
  std::string cmd = "cd '" + dir_.string() + "' && '" QKV_TOOL_PATH "'";
  for (const std::string& a : args) cmd += " '" + a + "'";
  cmd += " < '" + stdin_file + "' > stdout.txt 2> stderr.txt";
  const int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(dir_ / "stdout.txt");
  r.err = slurp(dir_ / "stderr.txt");
  return r;
}

void DecodeToolTest::write(const std::string& name, const std::string& text) {
  std::ofstream(dir_ / name, std::ios::binary) << text;
}

}  // namespace qkv
