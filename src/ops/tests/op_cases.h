// One table of op test cases: every public op (forward and backward together) with its
// input shapes. The strided and precision tests run every row of this table.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "qkv/tensor/tensor.h"

namespace qkv::testing {

struct InputSpec {
  Shape shape;
  int64_t id_upper = 0;       // > 0: integer ids in [0, id_upper) instead of normals
  bool with_ignored = false;  // ids: element 1 is set to -1 (cross_entropy's ignore_index)
};

struct OpCase {
  std::string name;
  std::vector<InputSpec> inputs;
  // Forward and backward outputs of the op for these inputs.
  std::function<std::vector<Tensor>(const std::vector<TensorView>&)> run;
  double f32_atol = 1e-5;  // F32 fast path vs F64 reference
  double f32_rtol = 1e-4;
};

const std::vector<OpCase>& op_cases();

// The recurrent-cell and sequence ops' rows (op_cases_recurrent.cpp), added to the table.
void append_recurrent_cases(std::vector<OpCase>& cases);

// Inputs for a case in `dtype`, seeded by the case index.
std::vector<Tensor> make_inputs(const OpCase& c, DType dtype, uint64_t seed);

}  // namespace qkv::testing
