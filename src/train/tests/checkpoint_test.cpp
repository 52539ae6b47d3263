// Model and training-state files: round trips, and every way a file can be wrong is a
// typed error naming the file and the tensor or key (none crashes, also under ASan).
#include "qkv/train/checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "pipeline_test_util.h"
#include "qkv/base/rng.h"
#include "qkv/io/atomic_file.h"
#include "qkv/io/safetensors.h"

namespace qkv::train {
namespace {

using testing::parameter_values;
using testing::test_dir;
using testing::throws_with;

constexpr int64_t kVocab = 24;

std::unique_ptr<models::Seq2Seq> small_model(uint64_t seed = 5) {
  return models::make_model(testing::tiny_rnn(kVocab, 0.0), seed);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Rewrites the safetensors file at `path` after `edit` changed its tensors or metadata.
void rewrite(const std::filesystem::path& path,
             const std::function<void(io::SafetensorsFile&)>& edit) {
  io::SafetensorsFile f = io::load_safetensors(path);
  edit(f);
  io::save_safetensors(path, f.tensors, f.metadata);
}

Tensor* tensor_named(io::SafetensorsFile& f, const std::string& name) {
  for (auto& [n, t] : f.tensors)
    if (n == name) return &t;
  return nullptr;
}

TEST(ModelFile, RoundTripsEveryParameterBitwiseWithItsConfig) {
  const auto dir = test_dir();
  const auto model = small_model();
  save_model(*model, dir / kModelFile, "vocab.spm", 42);
  const LoadedModel loaded = load_model(dir / kModelFile);
  EXPECT_EQ(loaded.info.config, model->config());
  EXPECT_EQ(loaded.info.vocab_file, "vocab.spm");
  EXPECT_EQ(loaded.info.update, 42);
  EXPECT_EQ(loaded.info.qkv_version, qkv_version());
  EXPECT_TRUE(same_bits(parameter_values(*loaded.model), parameter_values(*model)));

  const auto other = small_model(/*seed=*/9);
  ASSERT_FALSE(same_bits(parameter_values(*other), parameter_values(*model)));
  load_parameters(*other, dir / kModelFile);
  EXPECT_TRUE(same_bits(parameter_values(*other), parameter_values(*model)));
  // Every parameter is stored under its own name, F32, loadable by any safetensors reader.
  const io::SafetensorsFile raw = io::load_safetensors(dir / kModelFile);
  EXPECT_EQ(raw.tensors.size(), model->parameters().size());
  EXPECT_EQ(raw.metadata.at("config"), models::to_json(model->config()));
}

TEST(ModelFile, TruncatedFilesAreIoErrorsNamingTheFile) {
  const auto dir = test_dir();
  save_model(*small_model(), dir / "full.safetensors");
  const std::vector<std::byte> bytes = io::read_file(dir / "full.safetensors", 1 << 24);
  const auto cut = dir / "cut.safetensors";
  // Every length is rejected by the safetensors reader (src/io's truncation test walks all
  // of them); here ~200 cuts, among them each boundary of the layout, go through
  // load_model and must come back as an IoError naming the file.
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), sizeof header);
  std::vector<size_t> cuts = {0,
                              1,
                              7,
                              8,
                              9,
                              size_t(8 + header / 2),
                              size_t(8 + header - 1),
                              size_t(8 + header),
                              size_t(8 + header + 1),
                              bytes.size() - 1};
  for (size_t n = 0; n < bytes.size(); n += std::max<size_t>(1, bytes.size() / 200))
    cuts.push_back(n);
  for (const size_t n : cuts) {
    // A plain write: hundreds of fsyncs would only make this test slow.
    std::ofstream(cut, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(n));
    EXPECT_TRUE(throws_with<IoError>([&] { load_model(cut); }, {cut.string()})) << "cut at " << n;
  }
}

TEST(ModelFile, BrokenOrForeignConfigIsAConfigError) {
  const auto dir = test_dir();
  const auto path = dir / kModelFile;
  save_model(*small_model(), path);
  rewrite(path, [](io::SafetensorsFile& f) { f.metadata["config"] = "{\"type\": \"rnn\""; });
  EXPECT_TRUE(throws_with<ConfigError>([&] { load_model(path); }, {path.string(), "config"}));
  rewrite(path, [](io::SafetensorsFile& f) { f.metadata.erase("config"); });
  EXPECT_TRUE(
      throws_with<ConfigError>([&] { load_model(path); }, {path.string(), "no model config"}));

  // A valid config that does not describe these tensors: shape mismatch.
  save_model(*small_model(), path);
  models::ModelConfig wider = testing::tiny_rnn(kVocab, 0.0);
  wider.dim_rnn += 2;
  rewrite(path, [&](io::SafetensorsFile& f) { f.metadata["config"] = models::to_json(wider); });
  EXPECT_TRUE(throws_with<IoError>([&] { load_model(path); }, {path.string(), "has shape"}));

  // Loading into a model of another config.
  save_model(*small_model(), path);
  const auto transformer = models::make_model(testing::tiny_transformer(kVocab, 0.0), 1);
  EXPECT_TRUE(throws_with<ConfigError>([&] { load_parameters(*transformer, path); },
                                       {path.string(), "holds a model with config"}));
}

TEST(ModelFile, MissingExtraMistypedOrMisshapedTensorsAreIoErrorsNamingThem) {
  const auto dir = test_dir();
  const auto path = dir / kModelFile;
  const auto model = small_model();
  const std::string victim = model->parameters().parameters().at(1).name;

  save_model(*model, path);
  rewrite(path, [&](io::SafetensorsFile& f) {
    std::erase_if(f.tensors, [&](const auto& t) { return t.first == victim; });
  });
  EXPECT_TRUE(throws_with<IoError>([&] { load_model(path); }, {path.string(), victim, "missing"}));

  save_model(*model, path);
  rewrite(path,
          [](io::SafetensorsFile& f) { f.tensors.emplace_back("stray", Tensor::zeros({2})); });
  EXPECT_TRUE(throws_with<IoError>([&] { load_model(path); },
                                   {path.string(), "unexpected tensor 'stray'"}));

  save_model(*model, path);
  rewrite(path, [&](io::SafetensorsFile& f) {
    Tensor* t = tensor_named(f, victim);
    *t = t->reshape({t->numel()});
  });
  EXPECT_TRUE(throws_with<IoError>([&] { load_model(path); }, {path.string(), victim, "shape"}));

  save_model(*model, path);
  rewrite(path, [&](io::SafetensorsFile& f) {
    Tensor* t = tensor_named(f, victim);
    *t = t->to(DType::F64);
  });
  EXPECT_TRUE(throws_with<IoError>([&] { load_model(path); }, {path.string(), victim, "f64"}));
}

TEST(ModelFile, NonFiniteWeightsAreNeverLoadedNorSaved) {
  const auto dir = test_dir();
  const auto path = dir / kModelFile;
  const auto model = small_model();
  const nn::Parameter& p = model->parameters().parameters().at(2);
  save_model(*model, path);
  rewrite(path, [&](io::SafetensorsFile& f) {
    tensor_named(f, p.name)->data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
  });
  const auto target = small_model(/*seed=*/8);
  const std::vector<float> before = parameter_values(*target);
  EXPECT_TRUE(throws_with<ValueError>([&] { load_parameters(*target, path); },
                                      {path.string(), p.name, "element 1"}));
  EXPECT_TRUE(same_bits(parameter_values(*target), before)) << "a failed load changed the model";

  // Saving a model that holds an Inf writes nothing and keeps the previous file.
  save_model(*model, path);
  const std::vector<std::byte> good = io::read_file(path, 1 << 24);
  p.variable.value().data<float>()[0] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(throws_with<ValueError>([&] { save_model(*model, path); }, {p.name, "inf"}));
  EXPECT_EQ(io::read_file(path, 1 << 24), good);
  EXPECT_THROW(save_model(*model, dir / "new.safetensors"), ValueError);
  EXPECT_FALSE(std::filesystem::exists(dir / "new.safetensors"));
}

// A training state with every field set to something other than its default.
struct SavedState {
  std::unique_ptr<models::Seq2Seq> model = small_model();
  Adam adam{model->parameters().numel(), AdamOptions{}};
  TrainProgress progress;

  SavedState() {
    Rng rng(4);
    for (float& m : adam.first_moment()) m = rng.normal();
    for (float& v : adam.second_moment()) v = rng.uniform();
    adam.set_step_count(17);
    progress = {.update = 19,
                .tokens_seen = 12345,
                .wall_seconds = 1.0 / 3.0,
                .valid_seconds = 0.125,
                .model_seed = 5,
                .dropout_offsets = {},
                .position = {.seed = 3, .epoch = 2, .index = 1, .fingerprint = ~uint64_t{0} - 7},
                .guard_consecutive = 1,
                .guard_total = 2,
                .validations = 3,
                .best_valid_loss = 2.0 / 3.0,
                .best_valid_bleu = 12.5,
                .stalled_validations = 1};
  }
};

TEST(TrainState, RoundTripsParametersMomentsStepAndProgressBitwise) {
  const auto dir = test_dir();
  const SavedState saved;
  save_train_state(dir / kTrainStateFile, saved.progress, *saved.model, saved.adam);
  const RestoredTraining r = load_train_state(dir / kTrainStateFile, AdamOptions{});
  const TrainProgress& a = r.progress;
  const TrainProgress& b = saved.progress;
  EXPECT_EQ(a.update, b.update);
  EXPECT_EQ(a.tokens_seen, b.tokens_seen);
  EXPECT_EQ(a.wall_seconds, b.wall_seconds);  // 17 digits: exact
  EXPECT_EQ(a.valid_seconds, b.valid_seconds);
  EXPECT_EQ(a.model_seed, b.model_seed);
  EXPECT_EQ(a.dropout_offsets, b.dropout_offsets);
  EXPECT_EQ(a.position.seed, b.position.seed);
  EXPECT_EQ(a.position.epoch, b.position.epoch);
  EXPECT_EQ(a.position.index, b.position.index);
  EXPECT_EQ(a.position.fingerprint, b.position.fingerprint);
  EXPECT_EQ(a.guard_consecutive, b.guard_consecutive);
  EXPECT_EQ(a.guard_total, b.guard_total);
  EXPECT_EQ(a.validations, b.validations);
  EXPECT_EQ(a.best_valid_loss, b.best_valid_loss);
  EXPECT_EQ(a.best_valid_bleu, b.best_valid_bleu);
  EXPECT_EQ(a.stalled_validations, b.stalled_validations);
  EXPECT_EQ(r.model->config(), saved.model->config());
  EXPECT_TRUE(same_bits(parameter_values(*r.model), parameter_values(*saved.model)));
  EXPECT_EQ(r.adam.step_count(), 17);
  const auto vec = [](std::span<const float> s) { return std::vector<float>(s.begin(), s.end()); };
  EXPECT_TRUE(same_bits(vec(r.adam.first_moment()), vec(saved.adam.first_moment())));
  EXPECT_TRUE(same_bits(vec(r.adam.second_moment()), vec(saved.adam.second_moment())));
}

TEST(TrainState, EveryMalformationIsATypedErrorNamingFileAndEntry) {
  const auto dir = test_dir();
  const auto path = dir / kTrainStateFile;
  const SavedState saved;
  const std::string p0 = saved.model->parameters().parameters().at(0).name;
  const auto fresh = [&] { save_train_state(path, saved.progress, *saved.model, saved.adam); };
  const auto load = [&] { load_train_state(path, AdamOptions{}); };

  fresh();
  rewrite(path, [](io::SafetensorsFile& f) { f.metadata.erase("data.fingerprint"); });
  EXPECT_TRUE(throws_with<IoError>(load, {path.string(), "'data.fingerprint' is missing"}));
  fresh();
  rewrite(path, [](io::SafetensorsFile& f) { f.metadata["update"] = "12x"; });
  EXPECT_TRUE(throws_with<IoError>(load, {path.string(), "'update' is not an integer"}));
  fresh();
  rewrite(path, [](io::SafetensorsFile& f) { f.metadata["adam_step"] = "99"; });
  EXPECT_TRUE(throws_with<IoError>(load, {path.string(), "adam_step"}));
  fresh();
  rewrite(path, [](io::SafetensorsFile& f) { f.metadata["valid.seconds"] = "0.5"; });
  EXPECT_TRUE(throws_with<IoError>(load, {path.string(), "'valid.seconds' = 0.5", "wall_seconds"}));
  fresh();
  // Files from before validation time was counted apart: none counted.
  rewrite(path, [](io::SafetensorsFile& f) { f.metadata.erase("valid.seconds"); });
  EXPECT_EQ(load_train_state(path, AdamOptions{}).progress.valid_seconds, 0.0);
  fresh();
  rewrite(path, [](io::SafetensorsFile& f) { f.metadata["format"] = "something"; });
  EXPECT_TRUE(throws_with<IoError>(load, {path.string(), "not a qkv training state"}));
  fresh();
  rewrite(path, [](io::SafetensorsFile& f) { f.metadata["config"] = "[]"; });
  EXPECT_TRUE(throws_with<ConfigError>(load, {path.string(), "config"}));
  fresh();
  rewrite(path, [&](io::SafetensorsFile& f) {
    std::erase_if(f.tensors, [&](const auto& t) { return t.first == "adam.v." + p0; });
  });
  EXPECT_TRUE(throws_with<IoError>(load, {path.string(), "adam.v." + p0, "missing"}));
  fresh();
  rewrite(path, [&](io::SafetensorsFile& f) {
    tensor_named(f, "adam.m." + p0)->data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  });
  EXPECT_TRUE(throws_with<ValueError>(load, {path.string(), "adam.m." + p0}));
  fresh();
  rewrite(path,
          [&](io::SafetensorsFile& f) { tensor_named(f, "adam.v." + p0)->data<float>()[0] = -1; });
  EXPECT_TRUE(throws_with<ValueError>(load, {path.string()}));

  fresh();
  const std::vector<std::byte> bytes = io::read_file(path, 1 << 24);
  io::write_file_atomically(path, std::span(bytes.data(), bytes.size() - 3));
  EXPECT_TRUE(throws_with<IoError>(load, {path.string()}));
}

TEST(TrainState, NonFiniteMomentsAreNeverSaved) {
  const auto dir = test_dir();
  SavedState saved;
  saved.adam.second_moment()[3] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { save_train_state(dir / kTrainStateFile, saved.progress, *saved.model, saved.adam); },
      {"adam.v."}));
  EXPECT_FALSE(std::filesystem::exists(dir / kTrainStateFile));
}

}  // namespace
}  // namespace qkv::train
