// Model files in models (no trainer linked): a saved model loads back bit-exactly with its
// metadata, a model path resolves to its file, and a path without a model is an IoError
// that names the path but no command-line flag (front ends add their own words).
#include "qkv/models/model_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "model_test_util.h"
#include "qkv/base/error.h"
#include "qkv/testing/scratch_dir.h"

namespace qkv::models {
namespace {

namespace fs = std::filesystem;

class ModelFileTest : public ::testing::Test {
 protected:
  qkv::testing::ScratchDir scratch_{"qkv_model_file_test"};
  fs::path dir_ = scratch_.path();
};

TEST_F(ModelFileTest, SavedModelsLoadBackBitExactlyWithTheirMetadata) {
  for (const ModelConfig& config :
       {testing::tiny_rnn(AttentionKind::Additive, CellType::Gru), testing::tiny_transformer()}) {
    const std::unique_ptr<Seq2Seq> model = make_model(config, 5);
    save_model(*model, dir_ / kModelFile, "other.spm", 42);
    const LoadedModel loaded = load_model(dir_ / kModelFile);
    EXPECT_EQ(loaded.model->config(), config);
    EXPECT_EQ(loaded.info.vocab_file, "other.spm");
    EXPECT_EQ(loaded.info.update, 42);
    EXPECT_EQ(loaded.info.qkv_version, qkv_version());
    EXPECT_EQ(read_model_info(dir_ / kModelFile).config, config);
    const auto& want = model->parameters().parameters();
    const auto& got = loaded.model->parameters().parameters();
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(want[i].variable.value().to_vector<float>(),
                got[i].variable.value().to_vector<float>())
          << want[i].name;
  }
}

// The vocabulary's stamp round-trips; a file saved without one (as before stamps) reads
// as nullopt, so old model files still load.
TEST_F(ModelFileTest, TheVocabularyStampRoundTripsAndIsOptional) {
  const std::unique_ptr<Seq2Seq> model = make_model(testing::tiny_transformer(), 1);
  const VocabStamp stamp{.fingerprint = "fnv1a64:00000000deadbeef",
                         .size = model->config().vocab_size,
                         .pad_id = 0,
                         .unk_id = 1,
                         .bos_id = 2,
                         .eos_id = 3};
  save_model(*model, dir_ / kModelFile, kVocabFile, 3, stamp);
  EXPECT_EQ(read_model_info(dir_ / kModelFile).vocab_stamp, stamp);
  EXPECT_EQ(load_model(dir_ / kModelFile).info.vocab_stamp, stamp);
  save_model(*model, dir_ / kModelFile);
  EXPECT_EQ(read_model_info(dir_ / kModelFile).vocab_stamp, std::nullopt);
}

TEST_F(ModelFileTest, PathsResolveToTheModelFile) {
  const std::unique_ptr<Seq2Seq> model = make_model(testing::tiny_transformer(), 1);
  EXPECT_EQ(model_path_kind(dir_), ModelPathKind::DirectoryWithoutModel);
  EXPECT_EQ(model_path_kind(dir_ / "none"), ModelPathKind::Missing);
  save_model(*model, dir_ / kModelFile);
  EXPECT_EQ(model_path_kind(dir_), ModelPathKind::Directory);
  EXPECT_EQ(model_path_kind(dir_ / kModelFile), ModelPathKind::File);
  EXPECT_EQ(model_file_at(dir_), dir_ / kModelFile);
  EXPECT_EQ(model_file_at(dir_ / kModelFile), dir_ / kModelFile);
}

TEST_F(ModelFileTest, AMissingModelNamesThePathButNoFlag) {
  for (const fs::path& p : {dir_, dir_ / "none"}) {
    try {
      (void)model_file_at(p);
      FAIL() << p;
    } catch (const IoError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(p.string()), std::string::npos) << what;
      EXPECT_EQ(what.find("--"), std::string::npos) << what;
    }
  }
}

TEST_F(ModelFileTest, LoadingIntoAModelOfAnotherConfigIsRefused) {
  save_model(*make_model(testing::tiny_transformer(), 1), dir_ / kModelFile);
  const std::unique_ptr<Seq2Seq> other =
      make_model(testing::tiny_rnn(AttentionKind::Dot, CellType::Lstm), 1);
  EXPECT_THROW(load_parameters(*other, dir_ / kModelFile), ConfigError);
}

}  // namespace
}  // namespace qkv::models
