// The training-state loader (train::load_train_state) on the input bytes as a
// train_state.safetensors file: metadata counters, the model config, the parameters and
// Adam's moments, all validated before use.
#include "fuzz_util.h"
#include "qkv/train/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace qkv;
  const std::filesystem::path path =
      fuzz::write_scratch("train_state.safetensors", fuzz::as_text(data, size));
  fuzz::expect_only_qkv_errors([&] {
    const train::RestoredTraining r = train::load_train_state(path, train::AdamOptions{});
    if (r.model == nullptr) fuzz::invariant_failed("load_train_state returned no model");
    if (r.adam.size() != r.model->parameters().numel())
      fuzz::invariant_failed("optimizer and model sizes differ");
  });
  return 0;
}
