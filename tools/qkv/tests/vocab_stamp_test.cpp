// A model that knows its vocabulary, end to end: a model directory whose vocab.spm was
// replaced by another vocabulary of the same size is refused, naming both files; model
// files written before the fingerprint (the compatibility models) translate as before,
// with a note on stderr.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "decode_tool_util.h"
#include "qkv/data/vocab.h"

namespace qkv {
namespace {

namespace fs = std::filesystem;

TEST_F(DecodeToolTest, ASwappedVocabularyOfTheSameSizeIsRefusedNamingBothFiles) {
  write("input.txt", "the red dog runs\n");
  make_model_dir("tf", models::ModelType::Transformer, models::AttentionKind::ScaledDot);
  const Result ok = qkv({"translate", "--model", "tf"}, (dir_ / "input.txt").string());
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_FALSE(contains(ok.err, "note")) << ok.err;

  // The same text and more: another vocabulary of the same size.
  std::string text = slurp(dir_ / "text.txt");
  for (int i = 0; i < 60; ++i) text += "two young boys play near the water\nzwei jungen spielen\n";
  write("other.txt", text);
  data::train_vocab({dir_ / "other.txt"}, kVocabSize, dir_ / "other.spm");
  ASSERT_EQ(data::Vocab::load(dir_ / "other.spm").size(), kVocabSize);
  fs::copy_file(dir_ / "other.spm", dir_ / "tf" / "vocab.spm",
                fs::copy_options::overwrite_existing);

  const Result r = qkv({"translate", "--model", "tf"}, (dir_ / "input.txt").string());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(contains(r.err, "tf/vocab.spm")) << r.err;
  EXPECT_TRUE(contains(r.err, "tf/model.safetensors")) << r.err;
  EXPECT_TRUE(contains(r.err, "is not the one the model")) << r.err;
}

TEST_F(DecodeToolTest, ModelFilesWithoutAFingerprintTranslateAsBeforeWithANote) {
  const fs::path compat = QKV_COMPAT_DIR;
  const Result r = qkv({"translate", "--model", (compat / "models" / "transformer").string(),
                        "--beam-size", "1", "--threads", "1"},
                       (compat / "input.en").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, slurp(compat / "expected" / "transformer.greedy"));
  EXPECT_TRUE(contains(r.err, "records no vocabulary fingerprint")) << r.err;
}

}  // namespace
}  // namespace qkv
