// detail::top_k against its plain twin (a stable sort of every id), on rows long enough
// to take its skip over whole blocks of 16, with ties, and with the best ids at the
// start, the end and block edges.
#include "detail/top_k.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "qkv/base/error.h"
#include "qkv/base/rng.h"
#include "qkv/base/thread_pool.h"

namespace qkv::decode::detail {
namespace {

// The k best ids by sorting all of them: higher first, lower id on ties.
std::vector<int32_t> sorted_top_k(const std::vector<float>& lp, int64_t k) {
  std::vector<int32_t> ids(lp.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return lp[a] > lp[b]; });
  ids.resize(size_t(std::min<int64_t>(k, int64_t(lp.size()))));
  return ids;
}

TEST(TopK, EqualsSortingEveryId) {
  Rng rng(7);
  std::vector<int32_t> ids;
  for (const int64_t v : {1, 5, 15, 16, 17, 33, 100, 8000}) {
    for (const int64_t k : {1, 2, 4, 8}) {
      for (int trial = 0; trial < 6; ++trial) {
        std::vector<float> lp(static_cast<size_t>(v));
        // Few distinct values make ties; the planted maxima land on block edges too.
        for (float& x : lp)
          x = trial % 2 ? float(int(rng.uniform() * 5.0)) : -20.0f * rng.uniform();
        // The best id first in a block after a block passed over whole, or last in one.
        if (trial == 2 || trial == 3) lp[size_t((trial * 16) % v)] = 1.0f;
        if (trial >= 4) lp[size_t((trial * 16 - 1) % v)] = 1.5f;
        if (trial >= 4) lp[size_t(v - 1)] = 2.0f;
        top_k(lp.data(), v, k, ids);
        EXPECT_EQ(ids, sorted_top_k(lp, k)) << "V " << v << " k " << k << " trial " << trial;
      }
    }
  }
}

TEST(TopK, ANanAnywhereIsAnErrorNamingTheToken) {
  std::vector<int32_t> ids;
  for (const size_t at : {size_t(0), size_t(17), size_t(40), size_t(99)}) {
    std::vector<float> lp(100, -5.0f);
    lp[3] = 0.0f;  // the best, found before the NaN is reached
    lp[at] = std::nanf("");
    try {
      top_k(lp.data(), 100, 2, ids);
      ADD_FAILURE() << "no error for a NaN at " << at;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("token " + std::to_string(at)), std::string::npos)
          << e.what();
    }
  }
}

// Restores the pool's size when a test ends, however it ends.
struct ThreadCount {
  int saved = num_threads();
  ~ThreadCount() { set_num_threads(saved); }
};

TEST(TopK, RowsOverThePoolEqualEachRowOnItsOwn) {
  const ThreadCount restore;
  Rng rng(11);
  constexpr int64_t kRows = 37, kVocab = 1000;  // several chunks of the pool's grain
  std::vector<float> lp(size_t(kRows * kVocab));
  for (float& x : lp) x = float(int(rng.uniform() * 50.0));  // ties
  std::vector<int64_t> widths;
  for (int64_t r = 0; r < kRows; ++r) widths.push_back(1 + r % 5);
  for (const int threads : {1, 2, 3}) {
    set_num_threads(threads);
    std::vector<std::vector<int32_t>> ids{{99}};  // stale contents are replaced
    top_k_rows(lp.data(), kVocab, widths, ids);
    ASSERT_EQ(ids.size(), size_t(kRows));
    std::vector<int32_t> one;
    for (int64_t r = 0; r < kRows; ++r) {
      top_k(lp.data() + r * kVocab, kVocab, widths[size_t(r)], one);
      EXPECT_EQ(ids[size_t(r)], one) << "row " << r << ", " << threads << " threads";
    }
  }
}

TEST(TopK, RowsWithNansReportTheFirstRowsWhateverTheThreads) {
  const ThreadCount restore;
  constexpr int64_t kRows = 40, kVocab = 2000;
  std::vector<float> lp(size_t(kRows * kVocab), -3.0f);
  lp[size_t(9 * kVocab + 123)] = std::nanf("");   // the first row with a NaN
  lp[size_t(30 * kVocab + 456)] = std::nanf("");  // a later one, maybe found first
  const std::vector<int64_t> widths(size_t(kRows), 4);
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    std::vector<std::vector<int32_t>> ids;
    try {
      top_k_rows(lp.data(), kVocab, widths, ids);
      ADD_FAILURE() << "no error for the NaNs";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("token 123"), std::string::npos) << e.what();
    }
  }
}

// argmax_rows against the plain scan it replaced (the first strictly larger value wins),
// float and double, on rows with the best at the start, at the end and at vector and block
// edges, with ties for the best, NaNs (passed over; first in the row: never beaten) and
// -inf.
template <class T>
int32_t scanned_argmax(const T* row, int64_t v) {
  int64_t best = 0;
  for (int64_t i = 1; i < v; ++i)
    if (row[i] > row[best]) best = i;
  return int32_t(best);
}

TEST(ArgmaxRows, EqualsAPlainScanWithTiesNansAndInfinities) {
  const float nan = std::nanf(""), inf = INFINITY;
  for (const DType dt : {DType::F32, DType::F64}) {
    for (const int64_t v : {1, 5, 16, 17, 64, 100, 8000}) {
      std::vector<std::vector<float>> rows;
      Rng rng{uint64_t(v)};
      for (int64_t best : {int64_t{0}, int64_t{15}, int64_t{16}, int64_t{63}, v / 2, v - 1}) {
        if (best >= v) continue;
        std::vector<float> row(static_cast<size_t>(v));
        for (float& x : row) x = -1.0f - float(rng.uniform()) * 8.0f;
        row[size_t(best)] = -0.25f;
        rows.push_back(row);
        if (best + 5 < v) {  // a tie after the best: the first stays
          row[size_t(best + 5)] = -0.25f;
          rows.push_back(row);
        }
        row[size_t(v / 3)] = nan;  // a NaN anywhere but first: passed over
        rows.push_back(row);
        row[0] = nan;  // first: nothing is larger
        rows.push_back(row);
      }
      rows.push_back(std::vector<float>(size_t(v), -inf));
      Tensor lp = Tensor::empty({int64_t(rows.size()), v}, dt);
      std::vector<int32_t> want;
      for (size_t r = 0; r < rows.size(); ++r) {
        for (int64_t i = 0; i < v; ++i) {
          if (dt == DType::F32)
            lp.data<float>()[int64_t(r) * v + i] = rows[r][size_t(i)];
          else
            lp.data<double>()[int64_t(r) * v + i] = rows[r][size_t(i)];
        }
        want.push_back(scanned_argmax(rows[r].data(), v));
      }
      EXPECT_EQ(argmax_rows(lp), want) << "v " << v << (dt == DType::F32 ? " f32" : " f64");
    }
  }
}

}  // namespace
}  // namespace qkv::decode::detail
