// qkv_bench_encoder: encoder forward + backward time against source length, the RNN
// encoder against the self-attention encoder at a matched parameter count, at 1 and 2
// threads (issue 6, item 4: "an RNN encoder cannot be parallelised, self-attention
// can"). Driven by bench/run_encoder.sh; not part of the test suite.
//
//   qkv_bench_encoder [--lengths 10,20,50,100,200] [--batch 16] [--dim 256] [--hidden 256]
//                     [--ffn 1024] [--heads 4] [--layers 1] [--threads 1,2] [--reps 5]
//                     [--warmup 1]
//
// The two encoders, on the same input x [B, T, E] (as if embedded; no padding, every row
// T tokens; dropout off, so both do their arithmetic only):
//   rnn          the bidirectional GRU `qkv train --type rnn` builds (nn::GRU, PyTorch's
//                layout; --layers layers of --hidden units per direction) -> [B, T, 2H]
//   transformer  --layers pre-LN layers x += SelfAttn(LN(x)); x += FFN(LN(x)) and a final
//                LayerNorm, as models/detail/transformer_layers.cpp composes them, from
//                the public pieces (attention::MultiHeadAttention on the fused
//                scaled-dot kernel, nn::FeedForward with ReLU, nn::LayerNorm) -> [B, T, E]
// One run = forward, loss = Σ y ⊙ R (R fixed random, so every output gets a gradient),
// backward into the weights and x; the median of --reps runs after --warmup.
//
// Why the second thread helps one and not the other. The GRU's state h_t = f(h_{t-1},
// x_t) needs h_{t-1}: the T steps of a direction run one after another, forward and
// backward alike (backpropagation through time walks them in reverse). Only the input
// projection x W_ihᵀ for all steps is one large GEMM that splits over threads; each
// step's h W_hhᵀ is a [B, H] x [H, 3H] product too small to split well, and qkv runs the
// two directions one after the other (they are independent, so at most 2-way
// parallelism across time would be available, whatever T is). For B = 16, H = 256 a step
// is 16·256·768 ≈ 3M multiply-adds, below the 256³ that kernels/gemm.cpp splits. Self-attention has
// no such chain: every position's query meets every key at once, so the projections, the attention
// (flash kernel, partitioned by batch x head) and the FFN are large GEMM-like work over all T
// positions that the pool splits. The price is O(T²) attention work, against the RNN's O(T), which
// shows at long lengths on few cores.
#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "qkv/attention/multi_head.h"
#include "qkv/autograd/functions.h"
#include "qkv/base/cpu.h"
#include "qkv/base/error.h"
#include "qkv/base/rng.h"
#include "qkv/base/thread_pool.h"
#include "qkv/kernels/dispatch.h"
#include "qkv/kernels/gemm.h"
#include "qkv/nn/feed_forward.h"
#include "qkv/nn/layer_norm.h"
#include "qkv/nn/recurrent.h"

namespace {

namespace ag = qkv::autograd;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<int64_t> lengths = {10, 20, 50, 100, 200};
  std::vector<int64_t> threads = {1, 2};
  int64_t batch = 16, dim = 256, hidden = 256, ffn = 1024, heads = 4, layers = 1;
  int reps = 5, warmup = 1;
};

// An encoder: input x [B, T, E] -> output [B, T, D], its parameters in one store.
class Encoder {
 public:
  virtual ~Encoder() = default;
  virtual ag::Variable forward(const ag::Variable& x, const std::vector<int64_t>& lengths) = 0;
  virtual qkv::nn::ParameterStore& store() = 0;
};

class RnnEncoder final : public Encoder {
 public:
  explicit RnnEncoder(const Options& o)
      : store_(1),
        gru_(store_, "encoder.rnn",
             {.input_size = o.dim,
              .hidden_size = o.hidden,
              .layers = o.layers,
              .bidirectional = true,
              .bias = true,
              .dropout = 0.0}) {}
  ag::Variable forward(const ag::Variable& x, const std::vector<int64_t>& lengths) override {
    return gru_.forward(x, lengths).outputs;
  }
  qkv::nn::ParameterStore& store() override { return store_; }

 private:
  qkv::nn::ParameterStore store_;
  qkv::nn::GRU gru_;
};

class TransformerEncoder final : public Encoder {
 public:
  explicit TransformerEncoder(const Options& o) : store_(2), final_norm_(store_, "norm", o.dim) {
    for (int64_t l = 0; l < o.layers; ++l) {
      const std::string p = "layers." + std::to_string(l);
      Layer layer{qkv::nn::LayerNorm(store_, p + ".attn_norm", o.dim), std::nullopt,
                  qkv::nn::LayerNorm(store_, p + ".ffn_norm", o.dim),
                  qkv::nn::FeedForward(store_, p + ".ffn", o.dim, o.ffn)};
      qkv::attention::MultiHeadParams w;
      for (auto [var, name] : {std::pair{&w.wq, "wq"}, {&w.wk, "wk"}, {&w.wv, "wv"}, {&w.wo, "wo"}})
        *var = store_.add(p + ".attn." + name, {o.dim, o.dim}, qkv::nn::xavier_uniform_init());
      for (auto [var, name] : {std::pair{&w.bq, "bq"}, {&w.bk, "bk"}, {&w.bv, "bv"}, {&w.bo, "bo"}})
        *var = store_.add(p + ".attn." + name, {o.dim}, qkv::nn::zeros_init());
      layer.attn.emplace(w, o.heads);
      layers_.push_back(std::move(layer));
    }
  }
  ag::Variable forward(const ag::Variable& x, const std::vector<int64_t>& lengths) override {
    qkv::attention::MaskSpec mask;
    mask.key_lengths = lengths;
    ag::Variable h = x;
    for (Layer& l : layers_) {
      const ag::Variable n = l.attn_norm.forward(h);
      h = ag::add(h, l.attn->forward(n, n, n, mask).output);
      h = ag::add(h, l.ffn.forward(l.ffn_norm.forward(h)));
    }
    return final_norm_.forward(h);
  }
  qkv::nn::ParameterStore& store() override { return store_; }

 private:
  struct Layer {
    qkv::nn::LayerNorm attn_norm;
    std::optional<qkv::attention::MultiHeadAttention> attn;
    qkv::nn::LayerNorm ffn_norm;
    qkv::nn::FeedForward ffn;
  };
  qkv::nn::ParameterStore store_;
  qkv::nn::LayerNorm final_norm_;
  std::vector<Layer> layers_;
};

qkv::Tensor random_tensor(const qkv::Shape& shape, uint64_t seed) {
  qkv::Rng rng(seed);
  qkv::Tensor t = qkv::Tensor::empty(shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = rng.normal();
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median milliseconds of forward + loss + backward on a [batch, length, dim] input.
double time_encoder(Encoder& enc, const Options& o, int64_t length) {
  const std::vector<int64_t> lengths(size_t(o.batch), length);
  const ag::Variable x(random_tensor({o.batch, length, o.dim}, 7), /*requires_grad=*/true);
  std::optional<ag::Variable> r;  // R, shaped like the output once it is known
  std::vector<double> ms;
  for (int i = 0; i < o.warmup + o.reps; ++i) {
    const auto start = Clock::now();
    const ag::Variable y = enc.forward(x, lengths);
    if (!r) r.emplace(random_tensor(y.value().shape(), 11));
    ag::backward(ag::sum(ag::mul(y, *r)));
    const double el = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    enc.store().zero_grad();
    x.zero_grad();
    if (i >= o.warmup) ms.push_back(el);
  }
  return median(ms);
}

// "10,20,50" -> {10, 20, 50}, each >= min (ConfigError naming the flag otherwise).
std::vector<int64_t> parse_list(const std::string& text, const std::string& flag, int64_t min = 1) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    QKV_CHECK(!item.empty() && *end == '\0' && v >= min && v <= 1000000, qkv::ConfigError, flag,
              ": '", item, "' is not an integer in [", min,
              ", 1000000] (lists are comma-separated, e.g. 10,20,50)");
    out.push_back(v);
  }
  QKV_CHECK(!out.empty(), qkv::ConfigError, flag, ": empty list");
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    QKV_CHECK(i + 1 < argc, qkv::ConfigError, a, ": missing value (see the header of ",
              "bench/bench_encoder.cpp for the flags)");
    const std::string v = argv[++i];
    const auto one = [&](int64_t min = 1) { return parse_list(v, a, min).at(0); };
    if (a == "--lengths")
      o.lengths = parse_list(v, a);
    else if (a == "--threads")
      o.threads = parse_list(v, a);
    else if (a == "--batch")
      o.batch = one();
    else if (a == "--dim")
      o.dim = one();
    else if (a == "--hidden")
      o.hidden = one();
    else if (a == "--ffn")
      o.ffn = one();
    else if (a == "--heads")
      o.heads = one();
    else if (a == "--layers")
      o.layers = one();
    else if (a == "--reps")
      o.reps = int(one());
    else if (a == "--warmup")
      o.warmup = int(one(0));
    else
      QKV_THROW(qkv::ConfigError, "unknown flag ", a);
  }
  return o;
}

// The machine, as bench_training --info reports it.
void print_machine() {
  const qkv::CpuFeatures& cpu = qkv::cpu_features();
  std::printf("cpu: %s, %ld CPUs; %s\n", cpu.model_name.c_str(), sysconf(_SC_NPROCESSORS_ONLN),
              qkv::describe_cpu_features(cpu).c_str());
  std::printf("qkv: simd target %s; gemm backend %s; openblas: %s core=%s\n",
              std::string(qkv::kernels::active_simd_target()).c_str(),
              std::string(qkv::kernels::gemm_backend_description()).c_str(), openblas_get_config(),
              openblas_get_corename());
}

int run(const Options& o) {
  print_machine();
  RnnEncoder rnn(o);
  TransformerEncoder tf(o);
  const int64_t pr = rnn.store().numel(), pt = tf.store().numel();
  const double mismatch = std::abs(double(pr) - double(pt)) / double(std::max(pr, pt));
  std::printf(
      "rnn:         bidirectional GRU, %lld layer(s), E = %lld, H = %lld per direction: "
      "%lld parameters\n",
      (long long)o.layers, (long long)o.dim, (long long)o.hidden, (long long)pr);
  std::printf(
      "transformer: %lld pre-LN layer(s), E = %lld, %lld heads, FFN %lld: %lld "
      "parameters\n",
      (long long)o.layers, (long long)o.dim, (long long)o.heads, (long long)o.ffn, (long long)pt);
  std::printf("parameter counts differ by %.1f%%%s\n", 100 * mismatch,
              mismatch > 0.10 ? " (NOT matched within 10%: change --hidden or --ffn)" : "");
  std::printf(
      "batch %lld, no padding, float32; forward + backward, median of %d run(s) after "
      "%d warm-up\n\n",
      (long long)o.batch, o.reps, o.warmup);
  // ms[t][l] per model. Thread counts alternate within each length, so the runs a
  // speedup compares are seconds apart, not minutes (background load drifts).
  std::vector<std::vector<double>> rnn_ms(o.threads.size(), std::vector<double>(o.lengths.size()));
  std::vector<std::vector<double>> tf_ms = rnn_ms;
  for (size_t l = 0; l < o.lengths.size(); ++l) {
    for (size_t k = 0; k < o.threads.size(); ++k) {
      qkv::set_num_threads(int(o.threads[k]));
      rnn_ms[k][l] = time_encoder(rnn, o, o.lengths[l]);
      tf_ms[k][l] = time_encoder(tf, o, o.lengths[l]);
      std::fprintf(stderr, "threads %lld length %lld: rnn %.2f ms, transformer %.2f ms\n",
                   (long long)o.threads[k], (long long)o.lengths[l], rnn_ms[k][l], tf_ms[k][l]);
    }
  }
  std::printf("%7s", "length");
  for (const int64_t t : o.threads)
    std::printf(" | %4s %9s %9s %6s", (std::to_string(t) + "t").c_str(), "rnn ms", "tf ms",
                "rnn/tf");
  for (size_t k = 1; k < o.threads.size(); ++k)
    std::printf(
        " | %8s %6s",
        ("rnn x" + std::to_string(o.threads[k]) + "/" + std::to_string(o.threads[0])).c_str(),
        "tf");
  std::printf("\n");
  for (size_t l = 0; l < o.lengths.size(); ++l) {
    std::printf("%7lld", (long long)o.lengths[l]);
    for (size_t k = 0; k < o.threads.size(); ++k)
      std::printf(" | %4s %9.2f %9.2f %6.2f", "", rnn_ms[k][l], tf_ms[k][l],
                  rnn_ms[k][l] / tf_ms[k][l]);
    for (size_t k = 1; k < o.threads.size(); ++k)
      std::printf(" | %8.2f %6.2f", rnn_ms[0][l] / rnn_ms[k][l], tf_ms[0][l] / tf_ms[k][l]);
    std::printf("\n");
  }
  std::printf(
      "\nms: wall time of one forward + backward (weights and input gradients). rnn/tf > 1: "
      "the RNN is slower.\nrnn xN/M, tf: speedup of N threads over M threads (time at M / time "
      "at N); 2 on 2 idle cores is perfect.\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--help") {
    std::printf(
        "usage: qkv_bench_encoder [--lengths 10,20,50,100,200] [--batch 16] [--dim 256] "
        "[--hidden 256] [--ffn 1024] [--heads 4] [--layers 1] [--threads 1,2] [--reps 5] "
        "[--warmup 1]\n(see bench/bench_encoder.cpp and bench/run_encoder.sh)\n");
    return 0;
  }
  try {
    return run(parse(argc, argv));
  } catch (const qkv::Error& e) {
    std::fprintf(stderr, "qkv_bench_encoder: %s\n", e.what());
    return 2;
  }
}
