// The shared test helpers must fail when they should: an assertion helper that always
// succeeds would let every test that uses it pass on broken code.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include "qkv/base/error.h"
#include "qkv/testing/expect_error.h"
#include "qkv/testing/files.h"
#include "qkv/testing/scratch_dir.h"
#include "qkv/testing/tensors.h"
#include "qkv/testing/tiny_corpus.h"

namespace qkv::testing {
namespace {

namespace fs = std::filesystem;

// A subclass, as io's errors have them.
class NarrowError : public ValueError {
 public:
  using ValueError::ValueError;
};

void throw_value(const std::string& what) {
  throw ValueError(what, "here.cpp:1");
}

TEST(ExpectError, ThrowsWithChecksTypeAndEveryFragment) {
  EXPECT_TRUE(throws_with<ValueError>([] { throw_value("--beam-size: 0 is below 1"); },
                                      {"--beam-size", "below 1"}));
  EXPECT_FALSE(throws_with<ValueError>([] { throw_value("--beam-size: 0 is below 1"); },
                                       {"--beam-size", "above"}));
  EXPECT_FALSE(throws_with<ConfigError>([] { throw_value("x"); }, {}));
  EXPECT_FALSE(throws_with<ValueError>([] {}, {}));
  // A subclass is an E for throws_with, not for throws_exactly.
  const auto narrow = [] { throw NarrowError("narrow", "here.cpp:2"); };
  EXPECT_TRUE(throws_with<ValueError>(narrow, {"narrow"}));
  EXPECT_FALSE(throws_exactly<ValueError>(narrow, {"narrow"}));
  EXPECT_TRUE(throws_exactly<NarrowError>(narrow, {"narrow"}));
  EXPECT_FALSE(throws_exactly<NarrowError>(narrow, {"wide"}));
}

TEST(ScratchDir, IsFreshAndGoneAfterwardsEvenWhenMadeUnwritable) {
  fs::path kept;
  {
    const ScratchDir a("qkv_support_test"), b("qkv_support_test");
    EXPECT_NE(a.path(), b.path());
    EXPECT_TRUE(a.entries().empty());
    EXPECT_EQ(read_file(a.write("one.txt", std::string("x\0y", 3))), std::string("x\0y", 3));
    write_lines(a / "two.txt", {"first", "", "third"});
    EXPECT_EQ(read_file(a / "two.txt"), "first\n\nthird\n");
    EXPECT_EQ(a.entries(), (std::vector<std::string>{"one.txt", "two.txt"}));
    fs::permissions(a.path(), fs::perms::owner_write, fs::perm_options::remove);
    kept = a.path();
  }
  EXPECT_FALSE(fs::exists(kept));
  EXPECT_EQ(read_file(kept / "one.txt"), "");
}

TEST(TestDir, IsNamedAfterTheTestAndStartsEmpty) {
  const fs::path first = test_dir();
  EXPECT_NE(first.filename().string().find("TestDir.IsNamedAfterTheTestAndStartsEmpty"),
            std::string::npos)
      << first;
  write_file(first / "left.txt", "from before");
  const fs::path second = test_dir();
  EXPECT_EQ(second, first);
  EXPECT_FALSE(fs::exists(second / "left.txt"));
  fs::remove_all(second);
}

TEST(Tensors, BitwiseEqualSeesSignOfZeroAndNanBitsAndShapes) {
  Tensor a = Tensor::zeros(Shape{2, 2}, DType::F32), b = Tensor::zeros(Shape{2, 2}, DType::F32);
  EXPECT_TRUE(bitwise_equal(a, b));
  b.data<float>()[3] = -0.0f;
  EXPECT_FALSE(bitwise_equal(a, b));
  a.data<float>()[3] = b.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(bitwise_equal(a, b));
  EXPECT_FALSE(bitwise_equal(a, Tensor::zeros(Shape{4}, DType::F32)));
  EXPECT_FALSE(bitwise_equal(a, Tensor::zeros(Shape{2, 2}, DType::F64)));
}

TEST(Tensors, AllCloseUsesBothTolerancesAndStridedCopiesKeepValues) {
  const Tensor x = random_tensor(Shape{3, 5}, DType::F64, 7);
  Tensor y = x.to(DType::F64);
  y.data<double>()[4] += 1e-6;
  EXPECT_FALSE(all_close(x, y, 0, 0));
  EXPECT_TRUE(all_close(x, y, 2e-6, 0));
  EXPECT_TRUE(all_close(x, y, 0, 1e-6 / std::abs(x.data<double>()[4]) * 2));
  const StridedCopy s = strided_copy(x);
  EXPECT_FALSE(s.view.is_contiguous());
  EXPECT_TRUE(bitwise_equal(s.view, x));
  EXPECT_EQ(values_of(s.view), values_of(x));
}

TEST(TinyCorpus, TargetIsTheWordByWordTranslationReversedAndTheShapeHolds) {
  const TinyCorpus c = tiny_corpus(200, 3, {.words = 10, .min_length = 2, .length_spread = 7});
  ASSERT_EQ(c.source.size(), 200u);
  ASSERT_EQ(c.target.size(), 200u);
  const auto words_of = [](const std::string& line) {
    std::vector<std::string> w;
    std::istringstream in(line);
    for (std::string x; in >> x;) w.push_back(x);
    return w;
  };
  size_t shortest = 99, longest = 0;
  for (size_t i = 0; i < c.source.size(); ++i) {
    const auto s = words_of(c.source[i]), t = words_of(c.target[i]);
    ASSERT_EQ(s.size(), t.size());
    shortest = std::min(shortest, s.size());
    longest = std::max(longest, s.size());
    for (const std::string& w : s) EXPECT_NE(w, "park");  // word 11: outside .words = 10
    if (s.front() == "dog") {
      EXPECT_EQ(t.back(), "hund") << c.source[i];
    }
  }
  EXPECT_EQ(shortest, 2u);
  EXPECT_EQ(longest, 8u);
  EXPECT_EQ(tiny_corpus(200, 3, {.words = 10, .length_spread = 7}).source, c.source);
  EXPECT_NE(tiny_corpus(200, 4, {.words = 10, .length_spread = 7}).source, c.source);
  EXPECT_NE(tiny_corpus(200, 3, {.words = 10, .length_spread = 7, .rng_stream = 5}).source,
            c.source);
}

}  // namespace
}  // namespace qkv::testing
