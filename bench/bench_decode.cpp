// qkv_bench_decode: decoding speed of a trained model against PyTorch
// (bench/peer_torch_decode.py, the same weights), driven by bench/run_decode.sh. Not part
// of the test suite's timings; see bench/README.md.
//
// Both sides read the same source token ids (written here by --encode, so the peer needs
// no SentencePiece) and write the output ids, so the script compares the outputs line by
// line. Decoding runs through decode::translate_tokens, the driver `qkv translate` calls,
// with `qkv translate`'s defaults: beam K (1: the greedy path, no scores), length
// normalisation 0.6, at most 2 x source tokens (with EOS) + 5 output tokens, 32 sentences
// per batch, every sentence sorted by source length first (the CLI sorts within its
// read-ahead of 10 batches; here the whole input, which the peer copies).
//
//   qkv_bench_decode --model DIR --encode [--lines N] < text > ids
//   qkv_bench_decode --model DIR --ids FILE [--beam K] [--threads T] [--reps R]
//                    [--warmup N] [--mini-batch B] [--out FILE]
//   qkv_bench_decode --info
// --encode: one line of space-separated ids per input line that can be decoded (no
// tokens, or more than the model's positions allow: left out, counted on stderr).
// Decoding: --warmup sentences (default 64) decoded untimed, then --reps passes over all
// of them; one JSON line: seconds of each pass, sentences/s and output tokens/s (EOS not
// counted) of the median pass. --out FILE: the last pass's output ids, one line each.
#include <cblas.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "bench_args.h"
#include "qkv/base/cpu.h"
#include "qkv/base/error.h"
#include "qkv/base/memory.h"
#include "qkv/base/thread_pool.h"
#include "qkv/decode/translator.h"
#include "qkv/kernels/dispatch.h"
#include "qkv/kernels/gemm.h"

namespace {

constexpr const char* kUsage =
    "usage: qkv_bench_decode --model DIR --encode [--lines N] < text > ids\n"
    "       qkv_bench_decode --model DIR --ids FILE [--beam K] [--threads T] [--reps R]\n"
    "                        [--warmup N] [--mini-batch B] [--out FILE] [--simd T]\n"
    "       qkv_bench_decode [--simd T] --info\n"
    "--simd T pins qkv's kernels to SIMD target T (AVX3, AVX2, SCALAR, ...; --info shows the\n"
    "         active one); the GEMM backend stays as QKV_GEMM=openblas|portable|auto sets it\n"
    "(see bench/README.md, 'Decoding benchmark')\n";

using Clock = std::chrono::steady_clock;

struct Args {
  std::string model, ids, out;
  bool encode = false, info = false, help = false;
  long long lines = -1;  // --encode: at most this many decodable lines (-1: all)
  int beam = 4, threads = 1, reps = 3, mini_batch = 32;
  long long warmup = 64;
  int64_t simd_bits = 0;  // 0: automatic dispatch
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
    } else if (s == "--encode") {
      a.encode = true;
    } else if (s == "--model") {
      a.model = b::flag_value(argc, argv, i);
    } else if (s == "--ids") {
      a.ids = b::flag_value(argc, argv, i);
    } else if (s == "--out") {
      a.out = b::flag_value(argc, argv, i);
    } else if (s == "--lines") {
      a.lines = b::parse_int(b::flag_value(argc, argv, i), s, 1);
    } else if (s == "--beam") {
      a.beam = int(b::parse_int(b::flag_value(argc, argv, i), s, 1));
    } else if (s == "--simd") {
      a.simd_bits = b::parse_simd_target(b::flag_value(argc, argv, i), s);
    } else if (s == "--threads") {
      a.threads = int(b::parse_int(b::flag_value(argc, argv, i), s, 1));
    } else if (s == "--reps") {
      a.reps = int(b::parse_int(b::flag_value(argc, argv, i), s, 1));
    } else if (s == "--warmup") {
      a.warmup = b::parse_int(b::flag_value(argc, argv, i), s, 0);
    } else if (s == "--mini-batch") {
      a.mini_batch = int(b::parse_int(b::flag_value(argc, argv, i), s, 1));
    } else {
      QKV_THROW(qkv::ConfigError, s.starts_with("-") ? "unknown flag " : "unexpected argument ", s);
    }
  }
  if (!a.help && !a.info) {
    QKV_CHECK(!a.model.empty(), qkv::ConfigError, "--model DIR is required");
    QKV_CHECK(a.encode || !a.ids.empty(), qkv::ConfigError, "--ids FILE (or --encode) is required");
  }
  return a;
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

// stdin lines -> ids of the decodable ones on stdout.
int encode(const qkv::decode::Translator& tr, long long lines) {
  const int64_t limit = qkv::models::max_sequence_tokens(tr.model().config());
  long long kept = 0, empty = 0, too_long = 0;
  for (std::string line; (lines < 0 || kept < lines) && std::getline(std::cin, line);) {
    const std::vector<int32_t> ids = tr.vocab().encode(line);
    if (ids.empty()) {
      ++empty;
      continue;
    }
    if (int64_t(ids.size()) > limit) {
      ++too_long;
      continue;
    }
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
    ++kept;
  }
  std::fprintf(stderr,
               "qkv_bench_decode --encode: %lld lines kept, %lld without tokens, %lld over %lld "
               "tokens left out\n",
               kept, empty, too_long, (long long)limit);
  return kept > 0 ? 0 : 1;
}

std::vector<std::vector<int32_t>> read_ids(const std::string& path, int32_t vocab) {
  std::ifstream in(path);
  QKV_CHECK(bool(in), qkv::IoError, path, ": cannot open the ids file");
  std::vector<std::vector<int32_t>> rows;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    std::vector<int32_t> row;
    const char* p = line.c_str();
    char* end = nullptr;
    for (long x = std::strtol(p, &end, 10); end != p; x = std::strtol(p, &end, 10)) {
      QKV_CHECK(x >= 0 && x < vocab, qkv::IoError, path, ":", n, ": id ", x,
                " outside the vocabulary [0, ", vocab, ")");
      row.push_back(int32_t(x));
      p = end;
    }
    QKV_CHECK(!row.empty(), qkv::IoError, path, ":", n, ": no ids on the line");
    rows.push_back(std::move(row));
  }
  QKV_CHECK(!rows.empty(), qkv::IoError, path, ": no lines");
  return rows;
}

int decode(const qkv::decode::Translator& tr, const Args& a) {
  const std::vector<std::vector<int32_t>> rows = read_ids(a.ids, tr.vocab().size());
  qkv::set_num_threads(a.threads);
  qkv::decode::TranslateOptions o;  // `qkv translate`'s defaults
  o.search.beam_size = a.beam;
  o.search.normalize = 0.6;
  o.search.max_length_factor = 2.0;
  o.mini_batch = a.mini_batch;
  o.scores = false;  // beam 1: the greedy path, as `qkv translate --beam-size 1`
  const auto pass = [&](std::span<const std::vector<int32_t>> input) {
    return qkv::decode::translate_tokens(tr.model(), tr.vocab(), input, o);
  };
  if (a.warmup > 0)
    pass(std::span(rows).first(size_t(std::min<long long>(a.warmup, (long long)rows.size()))));
  std::vector<double> secs;
  std::vector<qkv::decode::SentenceResult> out;
  for (int r = 0; r < a.reps; ++r) {
    const auto t0 = Clock::now();
    out = pass(rows);
    secs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  long long tokens = 0;
  for (const auto& s : out) {
    QKV_CHECK(s.ok(), qkv::InternalError, "a sentence of the ids file was not decoded");
    tokens += (long long)s.hypotheses.at(0).tokens.size();
  }
  if (!a.out.empty()) {
    std::ofstream f(a.out);
    QKV_CHECK(bool(f), qkv::IoError, a.out, ": cannot write");
    for (const auto& s : out) {
      const std::vector<int32_t>& t = s.hypotheses[0].tokens;
      for (size_t i = 0; i < t.size(); ++i) f << (i ? " " : "") << t[i];
      f << "\n";
    }
    QKV_CHECK(bool(f.flush()), qkv::IoError, a.out, ": write failed");
  }
  std::vector<double> sorted = secs;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.size() % 2
                            ? sorted[sorted.size() / 2]
                            : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
  std::printf(
      "{\"case\": \"beam%d:thr=%d\", \"sentences\": %zu, \"tgt_tokens\": %lld, "
      "\"seconds\": [",
      a.beam, a.threads, rows.size(), tokens);
  for (size_t i = 0; i < secs.size(); ++i) std::printf(i ? ", %.4f" : "%.4f", secs[i]);
  // The process's peak resident set (kB): model, caches, beams and all.
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "], \"sentences_per_s\": %.3f, \"tokens_per_s\": %.2f, \"mini_batch\": %d, "
      "\"peak_rss_kb\": %ld}\n",
      double(rows.size()) / median, double(tokens) / median, a.mini_batch, usage.ru_maxrss);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return qkv::bench::guarded_main("qkv_bench_decode", [&] {
    const Args a = parse_args(argc, argv);
    if (a.help) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a.simd_bits != 0) qkv::kernels::force_simd_target(a.simd_bits);
    if (a.info) {
      print_info();
      return 0;
    }
    // The allocator policy of the `qkv` tool and of the peer (peer_torch.py).
    qkv::keep_freed_memory_for_reuse();
    const qkv::decode::Translator tr = qkv::decode::Translator::load(a.model);
    return a.encode ? encode(tr, a.lines) : decode(tr, a);
  });
}
