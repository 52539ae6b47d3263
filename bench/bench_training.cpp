// qkv_bench_training: training throughput of the three compared models against PyTorch
// (bench/peer_torch_training.py), driven by bench/run_training.sh. Not part of the test
// suite; see bench/README.md.
//
// One update = Seq2Seq::forward_train_loss (teacher forcing, the output projection fused
// with the label-smoothed cross-entropy as the trainer runs it: label smoothing 0.1, pad
// ignored, mean over target tokens; "forward" includes the loss) -> autograd::backward ->
// train::Adam over the store's value/grad arenas (lr 1e-4) -> zero_grad: what
// train::Trainer does per batch, without gradient clipping and the non-finite guard.
// Batches come from a file the peer writes (--make-batches), so both sides train on the
// same ids and lengths. tokens/s = real source + target tokens (padding not counted) per
// second of wall time over a window of --updates updates; the median of --reps windows,
// after --warmup untimed updates. Memory: peak RSS (VmHWM) after the warm-up and at the
// end, and minor page faults per timed update (getrusage), same fields as the peer.
//
//   qkv_bench_training --batches FILE [--reps N] [--warmup N] [--updates N] CASE...
//   qkv_bench_training --info
// CASE: transformer:thr=N | rnn-additive:thr=N | rnn-none:thr=N. Each runs in a fork()ed
// child (its own thread pool and heap); one JSON line per case, same fields as the peer.
#include <cblas.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_args.h"
#include "qkv/autograd/functions.h"
#include "qkv/base/cpu.h"
#include "qkv/base/error.h"
#include "qkv/base/memory.h"
#include "qkv/base/thread_pool.h"
#include "qkv/kernels/dispatch.h"
#include "qkv/kernels/gemm.h"
#include "qkv/models/seq2seq.h"
#include "qkv/train/optimizer.h"

namespace {

constexpr const char* kUsage =
    "usage: qkv_bench_training --batches FILE [--reps N] [--warmup N] [--updates N] "
    "[--cold-alloc] [--simd T] CASE...\n"
    "       qkv_bench_training [--simd T] --info\n"
    "--simd T pins qkv's kernels to SIMD target T (AVX3, AVX2, SCALAR, ...; --info shows the\n"
    "         active one); the GEMM backend stays as QKV_GEMM=openblas|portable|auto sets it\n"
    "CASE: transformer:thr=N | rnn-additive:thr=N | rnn-none:thr=N   (see bench/README.md)\n";

using Clock = std::chrono::steady_clock;
constexpr const char* kFormat = "qkv-training-batches 1";
constexpr double kLabelSmoothing = 0.1, kLearningRate = 1e-4;

struct Batch {
  qkv::Tensor src, tgt_in, tgt_out;  // [B, Ts], [B, Tt], [B, Tt] ids as floats
  std::vector<int64_t> src_lengths, tgt_lengths;
  int64_t tokens = 0, tgt_tokens = 0;  // real source + target tokens; target only
};

struct BatchFile {
  std::vector<Batch> batches;
  int64_t vocab = 0, pad = 0, bos = 0, eos = 0;
};

// Reads n integers from the next line of `in` into a vector (IoError naming the file).
std::vector<int64_t> read_ints(std::istream& in, const std::string& path, int64_t n) {
  std::string line;
  QKV_CHECK(bool(std::getline(in, line)), qkv::IoError, path, ": truncated batch file");
  std::vector<int64_t> v;
  v.reserve(size_t(n));
  const char* p = line.c_str();
  char* end = nullptr;
  for (long long x = std::strtoll(p, &end, 10); end != p; x = std::strtoll(p, &end, 10)) {
    v.push_back(x);
    p = end;
  }
  QKV_CHECK(int64_t(v.size()) == n, qkv::IoError, path, ": a line has ", v.size(),
            " integers, expected ", n);
  return v;
}

qkv::Tensor ids_tensor(const std::vector<int64_t>& ids, int64_t rows, int64_t cols) {
  std::vector<float> f(ids.begin(), ids.end());
  return qkv::Tensor::from({rows, cols}, f);
}

// The format written by peer_torch_training.py --make-batches (see there).
BatchFile read_batch_file(const std::string& path) {
  std::ifstream in(path);
  QKV_CHECK(bool(in), qkv::IoError, path, ": cannot open the batch file (write one with ",
            "/usr/bin/python3 bench/peer_torch_training.py --make-batches FILE)");
  std::string line, word;
  QKV_CHECK(std::getline(in, line) && line == kFormat, qkv::IoError, path,
            ": not a batch file (first line must be '", kFormat, "')");
  BatchFile f;
  int64_t count = 0;
  QKV_CHECK(std::getline(in, line), qkv::IoError, path, ": truncated header");
  std::map<std::string, int64_t> header;
  for (std::istringstream h(line); h >> word;) h >> header[word];
  count = header["batches"], f.vocab = header["vocab"], f.pad = header["pad"];
  f.bos = header["bos"], f.eos = header["eos"];
  QKV_CHECK(count > 0 && f.vocab > 0, qkv::IoError, path, ": bad header '", line, "'");
  for (int64_t i = 0; i < count; ++i) {
    int64_t b = 0, ts = 0, tt = 0;
    QKV_CHECK(std::getline(in, line), qkv::IoError, path, ": truncated at batch ", i);
    std::istringstream h(line);
    QKV_CHECK((h >> word >> b >> ts >> tt) && word == "batch" && b > 0 && ts > 0 && tt > 0,
              qkv::IoError, path, ": bad batch line '", line, "'");
    Batch x;
    x.src_lengths = read_ints(in, path, b);
    x.tgt_lengths = read_ints(in, path, b);
    x.src = ids_tensor(read_ints(in, path, b * ts), b, ts);
    x.tgt_in = ids_tensor(read_ints(in, path, b * tt), b, tt);
    x.tgt_out = ids_tensor(read_ints(in, path, b * tt), b, tt);
    for (int64_t r = 0; r < b; ++r) {
      x.tokens += x.src_lengths[size_t(r)] + x.tgt_lengths[size_t(r)];
      x.tgt_tokens += x.tgt_lengths[size_t(r)];
    }
    f.batches.push_back(std::move(x));
  }
  return f;
}

// The benchmark's configurations (issue 4, item 8): vocabulary 8000, tied embeddings,
// dropout 0.1; Transformer d = 256, 4 heads, 3 + 3 layers, FFN 1024; bi-GRU 256 encoder
// and GRU 256 decoder, one layer each, with Bahdanau attention or none.
qkv::models::ModelConfig config_for(const std::string& kind, const BatchFile& f) {
  namespace m = qkv::models;
  m::ModelConfig c;
  c.vocab_size = f.vocab, c.pad_id = f.pad, c.bos_id = f.bos, c.eos_id = f.eos;
  c.dim_emb = 256, c.dim_rnn = 256, c.dropout = 0.1, c.tied_embeddings = true;
  if (kind == "transformer") {
    c.type = m::ModelType::Transformer, c.attention = m::AttentionKind::ScaledDot;
    c.enc_depth = 3, c.dec_depth = 3, c.heads = 4, c.dim_ffn = 1024;
  } else {
    QKV_CHECK(kind == "rnn-additive" || kind == "rnn-none", qkv::ConfigError, "case kind '", kind,
              "': expected transformer, rnn-additive or rnn-none");
    c.type = m::ModelType::Rnn, c.cell = m::CellType::Gru, c.enc_depth = 1, c.dec_depth = 1;
    c.attention = kind == "rnn-additive" ? m::AttentionKind::Additive : m::AttentionKind::None;
  }
  return c;
}

int64_t status_kb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(f, line))
    if (line.compare(0, n, key) == 0 && line[n] == ':') return std::atoll(line.c_str() + n + 1);
  return -1;
}

// Minor page faults of this process so far: each is a page the kernel had to find (and
// zero) on first touch, the cost that a steady-state update should not pay again.
int64_t minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return int64_t(u.ru_minflt);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Options {
  int reps = 5, warmup = 1, updates = 1;
};

void print_list(const char* key, const std::vector<double>& v) {
  std::printf(", \"%s\": [", key);
  for (size_t i = 0; i < v.size(); ++i) std::printf("%s%.6g", i ? ", " : "", v[i]);
  std::printf("]");
}

// Runs one case in this (child) process and prints its JSON line.
int run_case(const std::string& name, const BatchFile& data, const Options& o) {
  namespace ag = qkv::autograd;
  const size_t colon = name.find(':');
  const std::string kind = name.substr(0, colon);
  QKV_CHECK(colon != std::string::npos && name.compare(colon, 5, ":thr=") == 0, qkv::ConfigError,
            "case '", name, "': expected KIND:thr=N");
  const int thr = std::atoi(name.c_str() + colon + 5);
  qkv::set_num_threads(thr);
  auto model = qkv::models::make_model(config_for(kind, data), /*seed=*/1234);
  qkv::nn::ParameterStore& store = model->parameters();
  qkv::train::Adam adam(store.numel(), {});
  const std::span<float> values(store.values().data<float>(), size_t(store.numel()));
  const std::span<float> grads(store.grads().data<float>(), size_t(store.numel()));
  double phase[4] = {0, 0, 0, 0};  // forward, loss, backward, optimizer
  std::vector<double> losses;
  size_t next = 0;
  auto update = [&](bool timed, int64_t& tokens, int64_t& tgt_tokens) {
    const Batch& b = data.batches[next++ % data.batches.size()];
    const auto t0 = Clock::now();
    // What the trainer runs: the output projection and the loss fused, in row chunks
    // (ops::linear_cross_entropy), so the loss phase is inside the forward one here.
    const ag::Variable loss =
        model->forward_train_loss(b.src, b.src_lengths, b.tgt_in, b.tgt_lengths, b.tgt_out,
                                  {.label_smoothing = kLabelSmoothing, .ignore_index = data.pad});
    const auto t1 = Clock::now();
    losses.push_back(double(loss.value().data<float>()[0]));
    const auto t2 = Clock::now();
    ag::backward(loss);
    const auto t3 = Clock::now();
    adam.step(values, grads, kLearningRate);
    store.zero_grad();
    const auto t4 = Clock::now();
    if (timed) {
      phase[0] += seconds(t0, t1), phase[1] += seconds(t1, t2);
      phase[2] += seconds(t2, t3), phase[3] += seconds(t3, t4);
    }
    tokens += b.tokens, tgt_tokens += b.tgt_tokens;
  };
  int64_t unused = 0, unused_tgt = 0;
  for (int i = 0; i < o.warmup; ++i) update(false, unused, unused_tgt);
  std::vector<double> rates, tgt_rates, secs;
  const int64_t rss_warm_kb = status_kb("VmHWM"), faults0 = minor_faults();
  for (int r = 0; r < o.reps; ++r) {
    int64_t tokens = 0, tgt_tokens = 0;
    const auto start = Clock::now();
    for (int u = 0; u < o.updates; ++u) update(true, tokens, tgt_tokens);
    const double el = seconds(start, Clock::now());
    rates.push_back(double(tokens) / el);
    tgt_rates.push_back(double(tgt_tokens) / el);
    secs.push_back(el / o.updates);
  }
  const double timed = double(o.reps) * o.updates;
  const double faults_per_update = double(minor_faults() - faults0) / timed;
  std::printf(
      "{\"case\": \"%s\", \"params\": %lld, \"tokens_per_s\": %.6g, \"tgt_tokens_per_s\": %.6g, "
      "\"s_per_update\": %.6g, \"simd\": \"%s\", \"gemm\": \"%s\"",
      name.c_str(), (long long)store.numel(), median(rates), median(tgt_rates), median(secs),
      qkv::kernels::active_simd_target().c_str(), qkv::kernels::gemm_backend_description().c_str());
  print_list("rates", rates);
  std::printf(
      ", \"phase_ms\": {\"forward\": %.6g, \"loss\": %.6g, \"backward\": %.6g, "
      "\"optimizer\": %.6g}, \"first_loss\": %.6g, \"last_loss\": %.6g, \"updates\": %zu, "
      "\"peak_rss_kb\": %lld, \"warmup_peak_rss_kb\": %lld, \"minflt_per_update\": %.6g}\n",
      1e3 * phase[0] / timed, 1e3 * phase[1] / timed, 1e3 * phase[2] / timed,
      1e3 * phase[3] / timed, losses.front(), losses.back(), next, (long long)status_kb("VmHWM"),
      (long long)rss_warm_kb, faults_per_update);
  std::fflush(stdout);
  return 0;
}

void print_info() {
  const qkv::CpuFeatures& cpu = qkv::cpu_features();
  std::printf(
      "{\"cpu_model\": \"%s\", \"num_cpus\": %ld, \"cpu_features\": \"%s\", "
      "\"qkv_simd_target\": \"%s\", \"qkv_gemm_backend\": \"%s\", "
      "\"openblas\": \"%s core=%s\"}\n",
      cpu.model_name.c_str(), sysconf(_SC_NPROCESSORS_ONLN),
      qkv::describe_cpu_features(cpu).c_str(),
      std::string(qkv::kernels::active_simd_target()).c_str(),
      std::string(qkv::kernels::gemm_backend_description()).c_str(), openblas_get_config(),
      openblas_get_corename());
}

// Rejects a malformed CASE in the parent, before a child is forked.
void check_case(const std::string& name) {
  const size_t colon = name.find(':');
  QKV_CHECK(colon != std::string::npos && name.compare(colon, 5, ":thr=") == 0, qkv::ConfigError,
            "case '", name, "': expected KIND:thr=N");
  const std::string kind = name.substr(0, colon);
  QKV_CHECK(kind == "transformer" || kind == "rnn-additive" || kind == "rnn-none", qkv::ConfigError,
            "case '", name, "': expected transformer, rnn-additive or rnn-none");
  qkv::bench::parse_int(std::string_view(name).substr(colon + 5), "thr", 1);
}

struct Args {
  Options o;
  std::string batches;
  bool cold_alloc = false, info = false, help = false;
  int64_t simd_bits = 0;  // 0: automatic dispatch
  std::vector<std::string> cases;
};

Args parse_args(int argc, char** argv) {
  namespace b = qkv::bench;
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string_view s = argv[i];
    if (s == "--help" || s == "-h") {
      a.help = true;
    } else if (s == "--info") {
      a.info = true;
    } else if (s == "--batches") {
      a.batches = b::flag_value(argc, argv, i);
    } else if (s == "--reps") {
      a.o.reps = int(b::parse_int(b::flag_value(argc, argv, i), s, 1));
    } else if (s == "--warmup") {
      a.o.warmup = int(b::parse_int(b::flag_value(argc, argv, i), s, 0));
    } else if (s == "--updates") {
      a.o.updates = int(b::parse_int(b::flag_value(argc, argv, i), s, 1));
    } else if (s == "--simd") {
      a.simd_bits = b::parse_simd_target(b::flag_value(argc, argv, i), s);
    } else if (s == "--cold-alloc") {
      a.cold_alloc = true;
    } else {
      QKV_CHECK(!s.starts_with("-"), qkv::ConfigError, "unknown flag ", s);
      check_case(argv[i]);
      a.cases.emplace_back(s);
    }
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  const int parsed = qkv::bench::guarded_main("qkv_bench_training", [&] {
    args = parse_args(argc, argv);
    return 0;
  });
  if (parsed != 0) return parsed;
  if (args.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args.simd_bits != 0) qkv::kernels::force_simd_target(args.simd_bits);
  if (args.info) {
    print_info();
    return 0;
  }
  const Options o = args.o;
  const std::string batches = args.batches;
  const bool cold_alloc = args.cold_alloc;
  const std::vector<std::string> cases = args.cases;
  // The peer's allocator policy (peer_torch.py): freed blocks stay in the heap, so the
  // large per-update tensors (logits [B, Tt, V]: ~200 MB) reuse warm pages instead of a
  // fresh mmap page-faulted every update. --cold-alloc keeps glibc's defaults.
  if (!cold_alloc) qkv::keep_freed_memory_for_reuse();
  BatchFile data;
  try {
    QKV_CHECK(!batches.empty(), qkv::ConfigError, "--batches FILE is required");
    data = read_batch_file(batches);
  } catch (const qkv::Error& e) {
    std::fprintf(stderr, "qkv_bench_training: %s\n", e.what());
    return 2;
  }
  int status = 0;
  for (const std::string& name : cases) {
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      try {
        std::_Exit(run_case(name, data, o));
      } catch (const std::exception& e) {
        std::string msg = e.what();
        std::replace(msg.begin(), msg.end(), '"', '\'');  // keep the JSON line valid
        std::printf("{\"case\": \"%s\", \"error\": \"%s\"}\n", name.c_str(), msg.c_str());
        std::fflush(stdout);
        std::_Exit(3);
      }
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
      if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 3)
        std::printf("{\"case\": \"%s\", \"error\": \"child exited with status %d\"}\n",
                    name.c_str(), ws);
      std::fflush(stdout);
      status = 1;
    }
  }
  return status;
}
