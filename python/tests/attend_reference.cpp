// The C++ API's attention::attend on arrays read from raw float32 files, for the Python
// tests to compare with qkv.attention.attend bit for bit.
//
//   attend_reference DIR KIND B TQ TK D DV CAUSAL [KEY_LENGTHS...]
// reads DIR/q.f32 [B, TQ, D], k.f32 [B, TK, D], v.f32 [B, TK, DV] and for KIND general
// w.f32 [D, D], for additive w.f32 [D, A], u.f32 [D, A], b.f32 [A], v_param.f32 [A] with
// A = D; writes DIR/context.f32 and DIR/weights.f32 (row-major float32).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "qkv/attention/attention.h"

namespace {

using qkv::Shape;
using qkv::Tensor;
using qkv::autograd::Variable;

Variable read(const std::filesystem::path& path, const Shape& shape) {
  std::vector<float> values(size_t(shape.numel()));
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(values.data()), std::streamsize(values.size() * sizeof(float)));
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return Variable(Tensor::from(shape, values));
}

void write(const std::filesystem::path& path, const Tensor& t) {
  const std::vector<float> values = t.to_vector<float>();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            std::streamsize(values.size() * sizeof(float)));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 9) {
    std::fprintf(stderr, "usage: %s DIR KIND B TQ TK D DV CAUSAL [KEY_LENGTHS...]\n", argv[0]);
    return 2;
  }
  namespace at = qkv::attention;
  const std::filesystem::path dir = argv[1];
  const std::string kind = argv[2];
  const int64_t b = std::atoll(argv[3]), tq = std::atoll(argv[4]), tk = std::atoll(argv[5]),
                d = std::atoll(argv[6]), dv = std::atoll(argv[7]);
  at::MaskSpec mask;
  mask.causal = std::string(argv[8]) == "1";
  for (int i = 9; i < argc; ++i) mask.key_lengths.push_back(std::atoll(argv[i]));
  at::ScoreParams params;
  at::AttentionOptions options;
  options.need_weights = true;
  if (kind == "scaled_dot") {
    options.kind = at::ScoreKind::ScaledDot;
  } else if (kind == "dot") {
    options.kind = at::ScoreKind::Dot;
  } else if (kind == "cosine") {
    options.kind = at::ScoreKind::Cosine;
  } else if (kind == "general") {
    options.kind = at::ScoreKind::General;
    params.w = read(dir / "w.f32", {d, d});
  } else {
    options.kind = at::ScoreKind::Additive;
    params.w = read(dir / "w.f32", {d, d});
    params.u = read(dir / "u.f32", {d, d});
    params.b = read(dir / "b.f32", {d});
    params.v = read(dir / "v_param.f32", {d});
  }
  const at::AttentionOutput out =
      at::attend(read(dir / "q.f32", {b, tq, d}), read(dir / "k.f32", {b, tk, d}),
                 read(dir / "v.f32", {b, tk, dv}), mask, params, options);
  write(dir / "context.f32", out.context.value());
  write(dir / "weights.f32", out.weights.value());
  return 0;
}
