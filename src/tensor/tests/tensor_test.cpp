#include "qkv/tensor/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <numeric>

#include "qkv/base/thread_pool.h"

namespace qkv {
namespace {

Tensor iota(const Shape& s) {
  std::vector<float> v(size_t(s.numel()));
  std::iota(v.begin(), v.end(), 0.0f);
  return Tensor::from(s, v);
}

TEST(Shape, BasicsAndErrors) {
  const Shape s{2, 3, 4};
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.rows(), 6);
  EXPECT_EQ(s.dim(-1), 4);
  EXPECT_EQ(s.str(), "[2, 3, 4]");
  EXPECT_THROW(s.dim(3), ShapeError);
  EXPECT_THROW((Shape{2, -1}), ShapeError);
  EXPECT_THROW((Shape{1, 2, 3, 4, 5, 6, 7, 8, 9}), ShapeError);
  EXPECT_THROW((Shape{INT64_MAX, 4}.numel()), ShapeError);
  EXPECT_EQ(Shape{}.numel(), 1);
}

TEST(Tensor, CreationIsAlignedAndFilled) {
  Tensor z = Tensor::zeros({3, 5});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(z.data<float>()) % 64, 0u);
  for (float v : z.to_vector<float>()) EXPECT_EQ(v, 0.0f);
  Tensor f = Tensor::full({2}, 2.5, DType::F64);
  EXPECT_EQ(f.to_vector<double>(), (std::vector<double>{2.5, 2.5}));
  EXPECT_THROW(Tensor::from({2, 2}, std::vector<float>{1, 2, 3}), ShapeError);
  EXPECT_TRUE(Tensor::empty({0, 4}).defined());
  EXPECT_FALSE(Tensor().defined());
}

// The Python module's zero-copy path: the Tensor reads the caller's elements in place and
// releases them through the owner only after its last copy is gone.
TEST(Tensor, AdoptSharesForeignElementsAndReleasesThemLast) {
  auto elements = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6});
  bool released = false;
  std::shared_ptr<void> owner(elements->data(), [&released, elements](void*) { released = true; });
  Tensor t = Tensor::adopt(std::move(owner), TensorView(elements->data(), {2, 3}, DType::F32));
  EXPECT_EQ(t.data<float>(), elements->data());
  EXPECT_EQ(t.at<float>({1, 2}), 6.0f);
  Tensor row = t.slice(0, 1, 2);
  t = Tensor();
  EXPECT_FALSE(released);
  EXPECT_EQ(row.to_vector<float>(), (std::vector<float>{4, 5, 6}));
  row = Tensor();
  EXPECT_TRUE(released);
  EXPECT_THROW(Tensor::adopt(nullptr, TensorView(elements->data(), {6}, DType::F32)), ValueError);
}

TEST(Tensor, WrongDTypeAccessThrows) {
  Tensor t = Tensor::zeros({2});
  EXPECT_THROW(t.data<double>(), ValueError);
}

TEST(Tensor, TransposeIsAStridedViewSharingStorage) {
  Tensor t = iota({2, 3});
  Tensor tt = t.transpose(0, 1);
  EXPECT_EQ(tt.shape(), (Shape{3, 2}));
  EXPECT_FALSE(tt.is_contiguous());
  EXPECT_EQ(tt.at<float>({2, 1}), 5.0f);
  t.at<float>({1, 2}) = 50.0f;
  EXPECT_EQ(tt.at<float>({2, 1}), 50.0f);
  EXPECT_EQ(tt.contiguous().to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 50}));
}

TEST(Tensor, SoleOwnerIsFalseWhileAnotherHandleOrViewShares) {
  EXPECT_FALSE(Tensor().sole_owner());
  Tensor t = Tensor::zeros({2, 3});
  EXPECT_TRUE(t.sole_owner());
  {
    const Tensor view = t.transpose(0, 1);
    EXPECT_FALSE(t.sole_owner());
    EXPECT_FALSE(view.sole_owner());
  }
  EXPECT_TRUE(t.sole_owner());
  const Tensor copy = t;
  EXPECT_FALSE(t.sole_owner());
}

TEST(Tensor, SliceAndReshape) {
  Tensor t = iota({4, 3});
  Tensor s = t.slice(0, 1, 3);
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{3, 4, 5, 6, 7, 8}));
  Tensor c = t.slice(1, 1, 2);
  EXPECT_FALSE(c.is_contiguous());
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 4, 7, 10}));
  EXPECT_EQ(t.reshape({2, 6}).at<float>({1, 0}), 6.0f);
  EXPECT_THROW(t.reshape({5, 2}), ShapeError);
  EXPECT_THROW(c.reshape({4}), ShapeError);
  EXPECT_THROW(t.slice(0, 2, 5), IndexError);
  EXPECT_THROW(t.at<float>({4, 0}), IndexError);
}

TEST(Tensor, ConversionRoundTrips) {
  Tensor t = iota({3, 2, 2}).transpose(0, 2);
  Tensor d = t.to(DType::F64);
  EXPECT_EQ(d.dtype(), DType::F64);
  EXPECT_EQ(d.to(DType::F32).to_vector<float>(), t.contiguous().to_vector<float>());
}

TEST(Tensor, ShapeErrorNamesBothShapes) {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({3, 2});
  try {
    copy_into(a, b);
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("f32[2, 3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[3, 2]"), std::string::npos) << e.what();
  }
}

// copy_into's three paths (contiguous memcpy, dense inner rows under strided outer axes,
// the general odometer) and the dtype-converting copies all put every element where
// at() says it belongs.
TEST(Tensor, CopyIntoEveryPathPlacesEveryElement) {
  Tensor base = Tensor::empty({4, 5, 6});
  for (int64_t i = 0; i < base.numel(); ++i) base.data<float>()[i] = float(i);
  const std::vector<Tensor> sources = {base,                  // contiguous
                                       base.slice(1, 1, 4),   // dense rows, strided outer
                                       base.transpose(0, 1),  // dense rows, permuted outer
                                       base.transpose(1, 2),  // inner axis strided
                                       base.slice(2, 2, 3)};  // single-column rows
  for (const Tensor& src : sources) {
    for (DType dtype : {DType::F32, DType::F64}) {
      SCOPED_TRACE(describe(src) + " -> " + std::string(dtype_name(dtype)));
      const Tensor dst = src.to(dtype);
      const Shape& s = src.shape();
      for (int64_t a = 0; a < s[0]; ++a)
        for (int64_t b = 0; b < s[1]; ++b)
          for (int64_t c = 0; c < s[2]; ++c) {
            const double want = src.at<float>({a, b, c});
            const double got =
                dtype == DType::F32 ? dst.at<float>({a, b, c}) : dst.at<double>({a, b, c});
            ASSERT_EQ(got, want) << a << "," << b << "," << c;
          }
      // Into a strided destination as well.
      Tensor wide = Tensor::zeros({s[0], s[1], s[2] + 3}, dtype);
      copy_into(src, wide.slice(2, 1, 1 + s[2]));
      for (int64_t a = 0; a < s[0]; ++a)
        for (int64_t b = 0; b < s[1]; ++b) {
          const double first =
              dtype == DType::F32 ? wide.at<float>({a, b, 1}) : wide.at<double>({a, b, 1});
          ASSERT_EQ(first, double(src.at<float>({a, b, 0})));
          const double pad =
              dtype == DType::F32 ? wide.at<float>({a, b, 0}) : wide.at<double>({a, b, 0});
          ASSERT_EQ(pad, 0.0);
        }
    }
  }
}

// Copies large enough to be split over the pool: every element still lands where at()
// says, whichever outer index a chunk starts at, for 1 and 2 threads.
TEST(Tensor, CopyIntoSplitOverThreadsPlacesEveryElement) {
  const int saved = num_threads();
  Tensor base = Tensor::empty({8, 40, 3, 301});  // 289k elements; 54-row chunks
  for (int64_t i = 0; i < base.numel(); ++i) base.data<float>()[i] = float(i);
  const std::vector<Tensor> sources = {base,                   // contiguous: split memcpy
                                       base.slice(2, 1, 3),    // dense rows, strided outer
                                       base.transpose(1, 2)};  // dense rows, permuted outer
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Tensor& src : sources) {
      for (DType dtype : {DType::F32, DType::F64}) {
        SCOPED_TRACE(describe(src) + " -> " + std::string(dtype_name(dtype)) + ", " +
                     std::to_string(threads) + " threads");
        const Tensor dst = src.to(dtype);
        const Shape& s = src.shape();
        for (int64_t a = 0; a < s[0]; ++a)
          for (int64_t b = 0; b < s[1]; ++b)
            for (int64_t c = 0; c < s[2]; ++c)
              for (int64_t e = 0; e < s[3]; e += 7) {
                const double want = src.at<float>({a, b, c, e});
                const double got = dtype == DType::F32 ? dst.at<float>({a, b, c, e})
                                                       : dst.at<double>({a, b, c, e});
                ASSERT_EQ(got, want) << a << "," << b << "," << c << "," << e;
              }
      }
    }
  }
  set_num_threads(saved);
}

}  // namespace
}  // namespace qkv
