// Per-row copies of per-source tensors (an rnn decoder state's attention keys and
// values): after any sequence of reorders the rows are what gathering the previous rows
// gives, the per-source tensor is never written, and a reorder copies only the rows whose
// source changes.
#include "detail/source_rows.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "detail/common.h"
#include "qkv/base/error.h"
#include "qkv/testing/tensors.h"

namespace qkv::models::detail {
namespace {

using qkv::testing::bitwise_equal;
using qkv::testing::random_tensor;

TEST(SourceRows, RowsAreTheGatheredRowsAfterEveryReorder) {
  for (const DType dtype : {DType::F32, DType::F64}) {
    const Tensor source = random_tensor({3, 5, 4}, dtype, 7);
    const Tensor pristine = Tensor::empty(source.shape(), dtype);
    copy_into(source, pristine);
    SourceRows rows(source);
    Tensor naive = source;  // what gathering every row on every reorder holds
    std::mt19937 rng(3);
    // A beam's life: widen 3 -> 12, shuffle within and across sentences, drop rows,
    // and widen again within the buffer.
    const std::vector<int64_t> sizes = {12, 12, 9, 9, 4, 7, 1, 5};
    for (const int64_t n : sizes) {
      std::vector<int64_t> indices(static_cast<size_t>(n));
      for (int64_t& i : indices) i = int64_t(rng() % uint64_t(naive.dim(0)));
      rows.reorder(indices);
      naive = gather_rows(naive, indices);
      ASSERT_TRUE(bitwise_equal(rows.rows(), naive)) << "after a reorder to " << n << " rows";
    }
    EXPECT_TRUE(bitwise_equal(source, pristine)) << "the per-source tensor was written";
  }
}

TEST(SourceRows, AReorderCopiesOnlyTheRowsWhoseSourceChanges) {
  const Tensor source = random_tensor({2, 3}, DType::F32, 1);
  SourceRows rows(source);
  rows.reorder(std::vector<int64_t>{0, 0, 1, 1});  // sources 0 0 1 1
  // Marks in the rows themselves: a row rewritten from its source loses its mark.
  for (int64_t b = 0; b < 4; ++b) rows.rows().data<float>()[b * 3] = 100.0f + float(b);
  // Rows 0 and 1 swap (both source 0), row 2 takes row 3's place (source 1), row 3
  // becomes source 0: only row 3 changes source.
  rows.reorder(std::vector<int64_t>{1, 0, 3, 2});
  rows.reorder(std::vector<int64_t>{0, 1, 2, 0});
  const float* r = rows.rows().data<float>();
  EXPECT_EQ(r[0], 100.0f);
  EXPECT_EQ(r[3], 101.0f);
  EXPECT_EQ(r[6], 102.0f);
  EXPECT_EQ(r[9], source.data<float>()[0]) << "row 3 now holds source 0's row";
  EXPECT_EQ(rows.origin(3), 0);
  EXPECT_EQ(rows.origin(2), 1);
}

TEST(SourceRows, RejectsBadIndicesAndKeepsItsRows) {
  const Tensor source = random_tensor({2, 3}, DType::F32, 2);
  SourceRows rows(source);
  rows.reorder(std::vector<int64_t>{1, 0, 1});
  const Tensor before = Tensor::empty(rows.rows().shape(), DType::F32);
  copy_into(rows.rows(), before);
  EXPECT_THROW(rows.reorder(std::vector<int64_t>{0, 3}), IndexError);
  EXPECT_THROW(rows.reorder(std::vector<int64_t>{-1}), IndexError);
  EXPECT_THROW(rows.reorder(std::vector<int64_t>{}), ValueError);
  EXPECT_TRUE(bitwise_equal(rows.rows(), before));
  EXPECT_THROW(SourceRows(Tensor::empty({0, 3}, DType::F32)), ShapeError);
  EXPECT_THROW(SourceRows(Tensor::empty({}, DType::F32)), ShapeError);
  EXPECT_THROW(SourceRows{Tensor()}, ShapeError);
}

}  // namespace
}  // namespace qkv::models::detail
