// The F32 path (fast kernels) agrees with the F64 path (reference twins) for every op,
// within float tolerance, on every SIMD target this CPU can run.
#include "op_cases.h"
#include "qkv/kernels/dispatch.h"
#include "qkv/testing/tensors.h"

namespace qkv::testing {
namespace {

void expect_f32_matches_f64(const OpCase& c, uint64_t seed) {
  const std::vector<Tensor> in64 = make_inputs(c, DType::F64, seed);
  std::vector<Tensor> in32;
  for (const Tensor& t : in64) in32.push_back(t.to(DType::F32));
  const std::vector<Tensor> out64 = c.run({in64.begin(), in64.end()});
  const std::vector<Tensor> out32 = c.run({in32.begin(), in32.end()});
  ASSERT_EQ(out64.size(), out32.size());
  for (size_t i = 0; i < out64.size(); ++i) {
    EXPECT_EQ(out32[i].dtype(), DType::F32);
    EXPECT_EQ(out64[i].dtype(), DType::F64);
    EXPECT_TRUE(all_close(out32[i], out64[i], c.f32_atol, c.f32_rtol)) << "output " << i;
  }
}

TEST(Precision, F32FastPathMatchesF64ReferenceOnEverySimdTarget) {
  for (const kernels::SimdTarget& target : kernels::simd_targets()) {
    const kernels::ScopedSimdTarget pin(target.bits);
    uint64_t seed = 500;
    for (const OpCase& c : op_cases()) {
      SCOPED_TRACE(target.name + " " + c.name);
      expect_f32_matches_f64(c, seed += 10);
    }
  }
}

}  // namespace
}  // namespace qkv::testing
