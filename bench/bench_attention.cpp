// qkv_bench_attention: qkv's attention against PyTorch (bench/peer_torch_attention.py),
// driven by bench/run_attention.sh. Not part of the test suite; see bench/README.md.
//
// A standalone timing main rather than Google Benchmark: every case runs in a fresh
// fork()ed child process so its peak-memory figure (VmHWM after a clear_refs reset, minus
// VmRSS once inputs and outputs are allocated and touched) is not hidden by heap pages
// an earlier case left resident, and so repetitions can adapt to multi-second calls.
// The parent never starts qkv's thread pool (it only forks), so each child starts clean.
//
//   qkv_bench_attention [--reps N] [--min-time S] CASE...   one JSON line per case
//   qkv_bench_attention --info                               context JSON
// CASE (same strings as the peer):
//   sdpa:b=B:h=H:t=T:d=D:causal=0|1:mode=fwd|fwdbwd:thr=N   kernels::flash_attention_*;
//                                                           fwdbwd keeps the probabilities
//                                                           for backward as training does
//                                                           (within ops::kFlashKeepProbsBytes)
//   additive:b=B:t=T:a=A:d=D:thr=N                          attend(), ScoreKind::Additive,
//                                                           forward + backward (composed)
//   gemm:n=N:thr=N                                          kernels::gemm, N×N×N
#include <cblas.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_args.h"
#include "qkv/attention/attention.h"
#include "qkv/autograd/functions.h"
#include "qkv/autograd/variable.h"
#include "qkv/base/aligned.h"
#include "qkv/base/cpu.h"
#include "qkv/base/thread_pool.h"
#include "qkv/kernels/dispatch.h"
#include "qkv/kernels/flash_attention.h"
#include "qkv/kernels/gemm.h"
#include "qkv/ops/flash_attention.h"

namespace {

constexpr const char* kUsage =
    "usage: qkv_bench_attention [--reps N] [--min-time S] [--simd T] CASE...   one JSON line per "
    "case\n"
    "       qkv_bench_attention [--simd T] --info                               context JSON\n"
    "--simd T pins qkv's kernels to SIMD target T (AVX3, AVX2, SCALAR, ...; --info lists them)\n"
    "CASE: sdpa:b=B:h=H:t=T:d=D:causal=0|1:mode=fwd|fwdbwd:thr=N | additive:b=B:t=T:a=A:d=D:thr=N\n"
    "      | gemm:n=N:thr=N   (see bench/README.md and bench/run_attention.sh)\n";

using Clock = std::chrono::steady_clock;

// Deterministic pattern in [-1, 1) (xorshift32), written once so every page is touched.
void fill(float* p, int64_t n, uint32_t seed) {
  uint32_t s = 0x9E3779B9u * (seed + 1);
  for (int64_t i = 0; i < n; ++i) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    p[i] = float(s >> 8) * 0x1.0p-23f - 1.0f;
  }
}

struct Buf {
  qkv::AlignedArray<float> a;
  explicit Buf(int64_t n, uint32_t seed) : a(qkv::make_aligned_array<float>(size_t(n))) {
    fill(a.get(), n, seed);
  }
  float* get() const { return a.get(); }
};

// kB from /proc/self/status ("VmRSS", "VmHWM").
int64_t status_kb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(f, line))
    if (line.compare(0, n, key) == 0 && line[n] == ':') return std::atoll(line.c_str() + n + 1);
  return -1;
}

// Resets VmHWM to the current RSS (Linux >= 4.0); false if not possible.
bool reset_hwm() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return bool(f);
}

using Case = std::map<std::string, std::string>;

Case parse(const std::string& s) {
  Case c;
  size_t pos = s.find(':');
  c["kind"] = s.substr(0, pos);
  while (pos != std::string::npos) {
    const size_t next = s.find(':', pos + 1);
    const std::string kv = s.substr(pos + 1, next - pos - 1);
    const size_t eq = kv.find('=');
    c[kv.substr(0, eq)] = kv.substr(eq + 1);
    pos = next;
  }
  return c;
}

// c[key] as a positive integer (causal: 0 or 1); ConfigError naming the case otherwise.
int64_t num(const Case& c, const char* key) {
  const auto it = c.find(key);
  QKV_CHECK(it != c.end(), qkv::ConfigError, "case '", c.at("kind"), "...': missing ", key, "=");
  return qkv::bench::parse_int(it->second, key, std::string_view(key) == "causal" ? 0 : 1);
}

// Rejects a malformed case in the parent, before any child is forked, so the error is
// one line with exit status 2 rather than a child's abort.
void check_case(const std::string& name) {
  const Case c = parse(name);
  const std::string& kind = c.at("kind");
  std::vector<const char*> keys;
  if (kind == "sdpa") {
    keys = {"b", "h", "t", "d", "causal"};
    const auto mode = c.find("mode");
    QKV_CHECK(mode != c.end() && (mode->second == "fwd" || mode->second == "fwdbwd"),
              qkv::ConfigError, "case '", name, "': mode= must be fwd or fwdbwd");
  } else if (kind == "additive") {
    keys = {"b", "t", "a", "d"};
  } else if (kind == "gemm") {
    keys = {"n"};
  } else {
    QKV_THROW(qkv::ConfigError, "case '", name, "': unknown kind '", kind,
              "' (sdpa, additive or gemm)");
  }
  keys.push_back("thr");
  for (const char* k : keys) num(c, k);
}

struct Timing {
  std::vector<double> times;      // seconds per call, one per repetition
  std::vector<double> cpu_times;  // process CPU seconds per call, one per repetition
  double first = 0;               // the first (warm-up) call
};

// CPU time of the whole process (all threads). At thr=1 on a loaded machine it counts
// only the time the case was on a core, so ratios between cases stay meaningful when
// wall times do not (it still includes cache and memory-bandwidth interference).
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// One warm-up call (also the call whose memory peak counts), then `reps` repetitions
// of at least min_time each; calls over 1 s get at most 3 repetitions of 1 call, over
// 4 s only 1 (the whole-run time budget).
Timing time_fn(const std::function<void()>& fn, int reps, double min_time) {
  Timing t;
  auto t0 = Clock::now();
  fn();
  t.first = std::chrono::duration<double>(Clock::now() - t0).count();
  if (t.first > 4.0)
    reps = 1;
  else if (t.first > 1.0)
    reps = std::min(reps, 3);
  for (int r = 0; r < reps; ++r) {
    int64_t n = 0;
    double el = 0;
    auto start = Clock::now();
    const double cpu0 = process_cpu_seconds();
    do {
      fn();
      ++n;
      el = std::chrono::duration<double>(Clock::now() - start).count();
    } while (el < min_time);
    t.times.push_back(el / double(n));
    t.cpu_times.push_back((process_cpu_seconds() - cpu0) / double(n));
  }
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Runs one case in this (child) process and prints its JSON line.
int run_case(const std::string& name, int reps, double min_time) {
  const Case c = parse(name);
  const int thr = int(num(c, "thr"));
  qkv::set_num_threads(thr);
  qkv::parallel_for(0, thr, 1, [](int64_t, int64_t) {});  // start the pool's workers
  std::function<void()> fn;
  double flops = 0;           // per call
  double kept_probs_mib = 0;  // sdpa fwdbwd: the probabilities kept for backward
  std::vector<Buf> bufs;      // inputs, outputs, scratch: allocated and touched up front
  bufs.reserve(16);
  std::vector<qkv::autograd::Variable> leaves;
  qkv::attention::ScoreParams params;
  const std::string kind = c.at("kind");
  if (kind == "sdpa") {
    const int64_t b = num(c, "b"), h = num(c, "h"), t = num(c, "t"), d = num(c, "d");
    const bool causal = num(c, "causal") != 0, bwd = c.at("mode") == "fwdbwd";
    qkv::kernels::FlashAttentionSpec s;
    s.bh = b * h, s.tq = t, s.tk = t, s.dh = d, s.dv = d;
    s.scale = 1.0 / std::sqrt(double(d));
    s.causal = causal;
    const int64_t n = s.bh * t * d, nl = s.bh * t;
    for (int i = 0; i < 3; ++i) bufs.emplace_back(n, uint32_t(i));  // q k v
    bufs.emplace_back(n, 3u);                                       // out
    bufs.emplace_back(nl, 4u);                                      // lse
    if (bwd) {
      bufs.emplace_back(n, 5u);                                           // dout
      bufs.emplace_back(nl, 6u);                                          // delta
      for (int i = 0; i < 3; ++i) bufs.emplace_back(n, uint32_t(7 + i));  // dq dk dv
    }
    float *q = bufs[0].get(), *k = bufs[1].get(), *v = bufs[2].get(), *o = bufs[3].get(),
          *lse = bufs[4].get();
    if (!bwd) {
      fn = [=] { qkv::kernels::flash_attention_forward(s, q, k, v, o, lse); };
    } else {
      float *dout = bufs[5].get(), *delta = bufs[6].get(), *dq = bufs[7].get(), *dk = bufs[8].get(),
            *dv = bufs[9].get();
      // Working memory of the call, as the training step's allocator hands it out again:
      // allocated here, first touched by the first (untimed) call, so it counts in +MiB.
      const int64_t kept =
          qkv::ops::flash_attention_kept_bytes(s.bh, s.tq, s.tk, qkv::ops::kFlashKeepProbsBytes);
      std::shared_ptr<qkv::AlignedArray<float>> probs;
      if (kept > 0) {
        probs = std::make_shared<qkv::AlignedArray<float>>(
            qkv::make_aligned_array<float>(size_t(kept) / sizeof(float)));
        kept_probs_mib = double(kept) / (1 << 20);
      }
      fn = [=] {
        float* p = probs ? probs->get() : nullptr;
        qkv::kernels::flash_attention_forward(s, q, k, v, o, lse, p);
        qkv::kernels::flash_attention_backward(s, q, k, v, o, lse, dout, delta, dq, dk, dv, p);
      };
    }
    flops = 4.0 * double(b * h) * double(t) * double(t) * double(d) * (causal ? 0.5 : 1.0);
    if (bwd) flops *= 3.5;  // backward counted as 2.5 × forward
  } else if (kind == "additive") {
    namespace ag = qkv::autograd;
    namespace at = qkv::attention;
    const int64_t b = num(c, "b"), t = num(c, "t"), a = num(c, "a"), d = num(c, "d");
    auto leaf = [&](qkv::Shape shape, uint32_t seed, float scale) {
      qkv::Tensor x = qkv::Tensor::empty(shape);
      fill(x.data<float>(), x.numel(), seed);
      if (scale != 1.0f)
        for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= scale;
      leaves.emplace_back(std::move(x), true);
      return leaves.back();
    };
    const float ws = float(1.0 / std::sqrt(double(d))), vs = float(1.0 / std::sqrt(double(a)));
    leaves.reserve(8);
    ag::Variable q = leaf({b, t, d}, 0, 1), k = leaf({b, t, d}, 1, 1), v = leaf({b, t, d}, 2, 1);
    params.w = leaf({d, a}, 3, ws), params.u = leaf({d, a}, 4, ws);
    params.b = leaf({a}, 5, 0.1f), params.v = leaf({a}, 6, vs);
    const at::AttentionOptions opt{.kind = at::ScoreKind::Additive};
    fn = [=] {
      at::AttentionOutput r = at::attend(q, k, v, {}, params, opt);
      ag::backward(ag::sum(r.context));
    };
    // Count: projections 2·B·T·D·A ×2, scores B·T²·A·(add, tanh, mul-add ≈ 4),
    // context 2·B·T²·D; backward as 2 × forward (a convention: only used for GFLOP/s).
    const double bt = double(b) * double(t);
    flops = 3.0 * (4.0 * bt * double(d) * double(a) + 4.0 * bt * double(t) * double(a) +
                   2.0 * bt * double(t) * double(d));
  } else if (kind == "gemm") {
    const int64_t n = num(c, "n");
    for (int i = 0; i < 3; ++i) bufs.emplace_back(n * n, uint32_t(i));
    qkv::kernels::GemmSpec s;
    s.m = s.n = s.k = n;
    s.lda = s.ldb = s.ldc = n;
    const float *a = bufs[0].get(), *bb = bufs[1].get();
    float* cc = bufs[2].get();
    fn = [=] { qkv::kernels::gemm(s, a, bb, cc); };
    flops = 2.0 * double(n) * double(n) * double(n);
  } else {
    std::fprintf(stderr, "unknown case %s\n", name.c_str());
    return 2;
  }
  const int64_t base_kb = status_kb("VmRSS");
  const bool reset = reset_hwm();
  const Timing tm = time_fn(fn, reps, min_time);
  const int64_t peak_kb = status_kb("VmHWM");
  const double med = median(tm.times);
  std::printf("{\"case\": \"%s\", \"median_s\": %.9g, \"times_s\": [", name.c_str(), med);
  for (size_t i = 0; i < tm.times.size(); ++i) std::printf("%s%.9g", i ? ", " : "", tm.times[i]);
  std::printf("], \"cpu_times_s\": [");
  for (size_t i = 0; i < tm.cpu_times.size(); ++i)
    std::printf("%s%.9g", i ? ", " : "", tm.cpu_times[i]);
  const double cpu_med = median(tm.cpu_times);
  std::printf("], \"cpu_median_s\": %.9g, \"cpu_gflops\": %.6g, \"simd\": \"%s\", ", cpu_med,
              flops / cpu_med / 1e9, std::string(qkv::kernels::active_simd_target()).c_str());
  std::printf(
      "\"first_s\": %.9g, \"gflops\": %.6g, \"base_rss_kb\": %lld, "
      "\"extra_peak_kb\": %lld, \"hwm_reset\": %s, \"kept_probs_mib\": %.6g}\n",
      tm.first, flops / med / 1e9, (long long)base_kb, (long long)(reset ? peak_kb - base_kb : -1),
      reset ? "true" : "false", kept_probs_mib);
  std::fflush(stdout);
  return 0;
}

void print_info() {
  const qkv::CpuFeatures& cpu = qkv::cpu_features();
  std::string targets;
  for (const qkv::kernels::SimdTarget& t : qkv::kernels::simd_targets())
    targets += (targets.empty() ? "" : " ") + t.name;
  std::printf(
      "{\"cpu_model\": \"%s\", \"num_cpus\": %ld, \"cpu_features\": \"%s\", "
      "\"qkv_simd_target\": \"%s\", \"qkv_simd_targets\": \"%s\", \"qkv_gemm_backend\": \"%s\", "
      "\"openblas\": \"%s core=%s\"}\n",
      cpu.model_name.c_str(), sysconf(_SC_NPROCESSORS_ONLN),
      qkv::describe_cpu_features(cpu).c_str(),
      std::string(qkv::kernels::active_simd_target()).c_str(), targets.c_str(),
      std::string(qkv::kernels::gemm_backend_description()).c_str(), openblas_get_config(),
      openblas_get_corename());
}

struct Args {
  int reps = 5;
  double min_time = 0.2;
  bool info = false, help = false;
  int64_t simd_bits = 0;  // 0: automatic dispatch
  std::vector<std::string> cases;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string_view s = argv[i];
    if (s == "--help" || s == "-h") {
      a.help = true;
    } else if (s == "--info") {
      a.info = true;
    } else if (s == "--reps") {
      a.reps = int(qkv::bench::parse_int(qkv::bench::flag_value(argc, argv, i), s, 1));
    } else if (s == "--simd") {
      a.simd_bits = qkv::bench::parse_simd_target(qkv::bench::flag_value(argc, argv, i), s);
    } else if (s == "--min-time") {
      a.min_time = qkv::bench::parse_seconds(qkv::bench::flag_value(argc, argv, i), s);
    } else {
      QKV_CHECK(!s.starts_with("-"), qkv::ConfigError, "unknown flag ", s);
      check_case(argv[i]);
      a.cases.emplace_back(s);
    }
  }
  QKV_CHECK(a.help || a.info || !a.cases.empty(), qkv::ConfigError, "no CASE given");
  return a;
}

// The child's body: an exception becomes an error line, not an abort.
int run_child(const std::string& name, int reps, double min_time) {
  try {
    return run_case(name, reps, min_time);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qkv_bench_attention: %s: %s\n", name.c_str(), e.what());
    return 3;
  }
}

int run(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  if (args.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  // Pinned in the parent, which runs no kernel: every forked child inherits it.
  if (args.simd_bits != 0) qkv::kernels::force_simd_target(args.simd_bits);
  if (args.info) {
    print_info();
    return 0;
  }
  const int reps = args.reps;
  const double min_time = args.min_time;
  int status = 0;
  for (const std::string& name : args.cases) {
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) std::_Exit(run_child(name, reps, min_time));
    int ws = 0;
    waitpid(pid, &ws, 0);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
      std::printf("{\"case\": \"%s\", \"error\": \"child exited with status %d\"}\n", name.c_str(),
                  ws);
      std::fflush(stdout);
      status = 1;
    }
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  return qkv::bench::guarded_main("qkv_bench_attention", [&] { return run(argc, argv); });
}
