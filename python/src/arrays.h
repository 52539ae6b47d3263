// numpy arrays <-> qkv Tensors, with the checks that make a wrong array a clear Python
// error instead of a crash: not an array or a wrong dtype -> TypeError, not C-contiguous or
// a wrong rank -> ValueError, each naming the argument. Neither direction copies: a Tensor
// adopts the array's elements (keeping the array alive), an array views a Tensor's.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "qkv/tensor/tensor.h"

namespace qkv::python {

namespace py = pybind11;

// `obj` as a Tensor over its elements: a float32 or float64 C-contiguous numpy array of
// `rank` dimensions (any rank when rank < 0). `dtype`, when set, is the dtype it must have
// (that of the first array of a call). `name` is the argument's, for messages.
Tensor tensor_from_array(const py::handle& obj, const char* name, int rank,
                         std::optional<DType> dtype = std::nullopt);

// A numpy array viewing `t`'s elements (made contiguous first if it is not), keeping them
// alive: no copy.
py::array array_from_tensor(const Tensor& t);

// A float32 numpy array of `shape` holding `values` (moved into it: no copy).
py::array array_from_floats(std::vector<float> values, const std::vector<int64_t>& shape);

// A sequence of ints (list, tuple, or a 1-d integer numpy array) -> int64 values;
// TypeError naming `name` otherwise.
std::vector<int64_t> int_list(const py::handle& obj, const char* name);

// "float32[2, 3]" for messages.
std::string describe_array(const py::array& a);

}  // namespace qkv::python
