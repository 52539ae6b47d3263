// The gradient exchange of data-parallel training alone, without the model: R ranks
// (mpirun -n R) combine a gradient arena of P floats, each with N micro-batch gradients,
// in the ordered chain (bitwise independent of R) and with MPI_Allreduce, timed per
// update; what the scaling model in README.md takes as its measured input.
//
// --check instead verifies the ordered exchange: every rank's result must equal, bit for
// bit, the sum that one process computes over all R·N micro-batch gradients in order
// (every rank can make every rank's gradients: they are a function of the indices).
// Exit status 1 when it does not; a small --chunk makes completions come out of order.
//
// usage: mpirun -n R qkv_bench_exchange [--params P] [--accumulate N] [--reps K]
//                                       [--chunk FLOATS (0: auto)] [--check]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "bench_args.h"
#include "qkv/train/mpi_exchange.h"

namespace {

using qkv::train::ExchangeMode;
using qkv::train::GradientExchange;
using qkv::train::WeightedGradient;

struct Args {
  long long params = 1'000'000, n = 1, reps = 10, chunk = qkv::train::kAutoChunk;
  bool check = false;
};

// Micro-batch j's gradient: values with many distinct exponents, so that a different
// summation order would change the bits.
std::vector<float> gradient(long long j, size_t count) {
  std::vector<float> g(count);
  uint64_t x = 0x9e3779b97f4a7c15ull * uint64_t(j + 1);
  for (float& v : g) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v = float(int64_t(x % 2001) - 1000) * std::ldexp(1.0f, int(x >> 59) - 20);
  }
  return g;
}
float weight(long long j, long long m) {
  return float(double(j + 1) / double(m * (m + 1) / 2));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One exchange of rank r's micro-batches [r·N, (r+1)·N) into `sum`.
void exchange_once(GradientExchange& ex, const std::vector<std::vector<float>>& grads,
                   long long first, long long m, std::vector<float>& sum) {
  std::vector<WeightedGradient> own;
  if (ex.sums_as_it_goes()) {
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (size_t i = 0; i < grads.size(); ++i)
      qkv::train::add_weighted(sum, grads[i], weight(first + (long long)i, m));
  } else {
    for (size_t i = 0; i < grads.size(); ++i)
      own.push_back({grads[i], weight(first + (long long)i, m)});
  }
  ex.reduce(sum, own);
}

// The same exchange overlapped as a backward pass would drive it: start_reduce() before
// the last micro-batch, its gradient reported ready in pieces of varying sizes in a
// shuffled order (another order on every rank), then finish_reduce().
void exchange_streamed(GradientExchange& ex, const std::vector<std::vector<float>>& grads,
                       long long first, long long m, std::vector<float>& sum) {
  std::vector<WeightedGradient> earlier;
  const size_t last = grads.size() - 1;
  if (ex.sums_as_it_goes()) {
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (size_t i = 0; i < last; ++i)
      qkv::train::add_weighted(sum, grads[i], weight(first + (long long)i, m));
  } else {
    for (size_t i = 0; i < last; ++i)
      earlier.push_back({grads[i], weight(first + (long long)i, m)});
  }
  ex.start_reduce(sum, earlier, {grads[last], weight(first + (long long)last, m)});
  std::vector<std::pair<size_t, size_t>> pieces;  // (begin, count)
  uint64_t x = 0x2545f4914f6cdd1dull * uint64_t(ex.rank() + 1);
  const auto next = [&] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  const size_t count = grads[last].size();
  for (size_t begin = 0; begin < count;) {
    const size_t n = std::min(count - begin, size_t(1 + next() % 3000));
    pieces.push_back({begin, n});
    begin += n;
  }
  for (size_t i = pieces.size(); i > 1; --i) std::swap(pieces[i - 1], pieces[next() % i]);
  // The last few pieces are left to finish_reduce(), as parameters the tape never reaches.
  for (size_t i = 0; i + 2 < pieces.size(); ++i)
    ex.gradient_ready(pieces[i].first, pieces[i].second);
  ex.finish_reduce();
}

int check(GradientExchange& ex, GradientExchange& allreduce, const Args& a) {
  const auto count = static_cast<size_t>(a.params);
  const long long m = a.n * ex.size(), first = a.n * ex.rank();
  std::vector<std::vector<float>> grads;
  for (long long i = 0; i < a.n; ++i) grads.push_back(gradient(first + i, count));
  std::vector<float> sum(count, -1.0f);
  exchange_once(ex, grads, first, m, sum);
  std::vector<float> expected(count, 0.0f);
  std::vector<double> magnitude(count, 0.0);  // Σ |w_j g_j|: the scale of rounding errors
  for (long long j = 0; j < m; ++j) {
    const std::vector<float> g = gradient(j, count);
    qkv::train::add_weighted(expected, g, weight(j, m));
    for (size_t i = 0; i < count; ++i) magnitude[i] += std::abs(double(weight(j, m)) * g[i]);
  }
  const auto bitwise = [&](const std::vector<float>& v) {
    return std::memcmp(v.data(), expected.data(), count * sizeof(float)) == 0;
  };
  const bool same = bitwise(sum);
  std::vector<float> streamed(count, -1.0f);
  exchange_streamed(ex, grads, first, m, streamed);
  const bool streamed_same = bitwise(streamed);
  // Allreduce, overlapped: not the single-process bits, but the same result on every
  // rank, close to the exact sum.
  std::vector<float> reduced(count, -1.0f);
  exchange_streamed(allreduce, grads, first, m, reduced);
  uint64_t hash = 1469598103934665603ull;
  double worst = 0;
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &reduced[i], sizeof bits);
    hash = (hash ^ bits) * 1099511628211ull;
    worst = std::max(worst,
                     std::abs(double(reduced[i]) - double(expected[i])) / (magnitude[i] + 1e-30));
  }
  const std::vector<uint64_t> hashes = ex.gather(std::span<const uint64_t>(&hash, 1));
  const bool agree =
      std::all_of(hashes.begin(), hashes.end(), [&](uint64_t h) { return h == hashes[0]; });
  const bool close = worst < 1e-5;  // float32 rounding of a few terms: ~1e-7
  const int bad = ex.max_over_ranks(same && streamed_same && agree && close ? 0 : 1) != 0;
  if (ex.rank() == 0) {
    std::printf(
        "ordered exchange, %d ranks x %lld micro-batches, %lld floats in chunks of %lld: "
        "%s; overlapped (gradient ready in shuffled pieces): %s\n",
        ex.size(), a.n, a.params, a.chunk,
        same ? "bitwise the single-process sum" : "DIFFERS from the single-process sum",
        streamed_same ? "bitwise the single-process sum" : "DIFFERS from the single-process sum");
    std::printf(
        "allreduce exchange, overlapped: %s on every rank, largest difference to the "
        "in-order sum, relative to the sum of magnitudes, %.2g%s\n",
        agree ? "the same" : "NOT the same", worst, close ? "" : " (TOO LARGE)");
  }
  return bad ? 1 : 0;
}

void time_mode(GradientExchange& ex, ExchangeMode mode, const Args& a) {
  const auto count = static_cast<size_t>(a.params);
  std::vector<std::vector<float>> grads;
  for (long long i = 0; i < a.n; ++i) grads.push_back(gradient(a.n * ex.rank() + i, count));
  std::vector<float> sum(count);
  std::vector<double> ms;
  for (long long rep = -2; rep < a.reps; ++rep) {  // 2 warm-up rounds
    MPI_Barrier(MPI_COMM_WORLD);                   // time the exchange, not the ranks' skew
    const auto start = std::chrono::steady_clock::now();
    exchange_once(ex, grads, a.n * ex.rank(), a.n * ex.size(), sum);
    const double t =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (rep >= 0) ms.push_back(t);
  }
  // The slowest rank's time is the exchange's.
  std::vector<double> worst(ms.size());
  MPI_Reduce(ms.data(), worst.data(), int(ms.size()), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (ex.rank() != 0) return;
  const int r = ex.size();
  // Bytes over all links per exchange, both modes: 2 arenas (the chain passes the
  // arena R-1 times each way; a ring allreduce sends 2 (R-1)/R of it from each rank).
  const double arena_mb = double(a.params) * 4 / 1e6;
  std::printf(
      "%-9s ranks %d params %lld (%.1f MB) accumulate %lld: %.1f MB over all links, "
      "%.2f ms median (min %.2f, max %.2f) over %lld\n",
      mode == ExchangeMode::Ordered ? "ordered" : "allreduce", r, a.params, arena_mb, a.n,
      2 * arena_mb * double(r - 1), median(worst), *std::min_element(worst.begin(), worst.end()),
      *std::max_element(worst.begin(), worst.end()), a.reps);
}

}  // namespace

int main(int argc, char** argv) {
  return qkv::bench::guarded_main("qkv_bench_exchange", [&] {
    Args a;
    namespace b = qkv::bench;
    for (int i = 1; i < argc; ++i) {
      const std::string_view flag = argv[i];
      if (flag == "--help") {
        std::printf(
            "usage: mpirun -n R qkv_bench_exchange [--params P] [--accumulate N] [--reps K] "
            "[--chunk FLOATS] [--check]\n");
        return 0;
      }
      if (flag == "--params")
        a.params = b::parse_int(b::flag_value(argc, argv, i), "--params", 1);
      else if (flag == "--accumulate")
        a.n = b::parse_int(b::flag_value(argc, argv, i), "--accumulate", 1);
      else if (flag == "--reps")
        a.reps = b::parse_int(b::flag_value(argc, argv, i), "--reps", 1);
      else if (flag == "--chunk")
        a.chunk = b::parse_int(b::flag_value(argc, argv, i), "--chunk", 0);
      else if (flag == "--check")
        a.check = true;
      else
        QKV_THROW(qkv::ConfigError, "unknown flag '", flag, "'");
    }
    // Both alive together: MPI is finalised when the last exchange goes.
    const auto ordered = qkv::train::make_mpi_exchange(ExchangeMode::Ordered, size_t(a.chunk));
    const auto allreduce = qkv::train::make_mpi_exchange(ExchangeMode::Allreduce, size_t(a.chunk));
    if (a.check) return check(*ordered, *allreduce, a);
    time_mode(*ordered, ExchangeMode::Ordered, a);
    time_mode(*allreduce, ExchangeMode::Allreduce, a);
    return 0;
  });
}
