// The model loader on the input bytes as a model file: read_model_info (metadata and
// config) and load_model (a model built from the stored config, every parameter
// checked and copied in). The loaders take a path, so the bytes go to a scratch file.
#include "fuzz_util.h"
#include "qkv/train/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace qkv;
  const std::filesystem::path path =
      fuzz::write_scratch("model.safetensors", fuzz::as_text(data, size));
  fuzz::expect_only_qkv_errors([&] { (void)train::read_model_info(path); });
  fuzz::expect_only_qkv_errors([&] {
    const train::LoadedModel loaded = train::load_model(path);
    if (loaded.model == nullptr) fuzz::invariant_failed("load_model returned no model");
    if (!(loaded.model->config() == loaded.info.config))
      fuzz::invariant_failed("the loaded model's config differs from the file's");
  });
  return 0;
}
