#include "arrays.h"

#include <memory>
#include <sstream>

namespace qkv::python {

std::string describe_array(const py::array& a) {
  std::ostringstream os;
  os << py::str(a.dtype()).cast<std::string>() << "[";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) os << (i ? ", " : "") << a.shape(i);
  os << "]";
  return os.str();
}

namespace {

std::string type_name(const py::handle& obj) {
  return py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
}

DType dtype_of_array(const py::array& a, const char* name) {
  // numpy's own equivalence test (PyArray_EquivTypes): native float32 / float64 in any of
  // their spellings; a byte-swapped array is another dtype.
  if (py::array_t<float>::check_(a)) return DType::F32;
  if (py::array_t<double>::check_(a)) return DType::F64;
  const std::string kind = py::str(a.dtype()).cast<std::string>();
  throw py::type_error(std::string(name) + " has dtype " + kind +
                       "; qkv computes in float32 or float64: pass " + name +
                       ".astype(numpy.float32)");
}

const char* numpy_name(DType dt) {
  return dt == DType::F64 ? "float64" : "float32";
}

}  // namespace

Tensor tensor_from_array(const py::handle& obj, const char* name, int rank,
                         std::optional<DType> dtype) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(std::string(name) + " must be a numpy array, got " + type_name(obj) +
                         " (numpy.asarray(" + name + ", dtype=numpy.float32) makes one)");
  const auto a = py::reinterpret_borrow<py::array>(obj);
  const DType dt = dtype_of_array(a, name);
  if (dtype && *dtype != dt)
    throw py::type_error(std::string(name) + " has dtype " + numpy_name(dt) +
                         " but the other arrays are " + numpy_name(*dtype) +
                         ": give every array one dtype");
  if (rank >= 0 && a.ndim() != rank)
    throw py::value_error(std::string(name) + " must have " + std::to_string(rank) +
                          " dimensions, got " + describe_array(a));
  if (!(a.flags() & py::array::c_style))
    throw py::value_error(std::string(name) + " " + describe_array(a) +
                          " is not C-contiguous (a transposed or sliced view?); qkv reads "
                          "arrays in place: pass numpy.ascontiguousarray(" +
                          name + ")");
  std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
  // The array stays alive while any Tensor shares its elements; releasing it needs the
  // GIL, which a compute call has given up, hence the acquire.
  auto* keep = new py::object(a);
  std::shared_ptr<void> owner(const_cast<void*>(a.data()), [keep](void*) {
    py::gil_scoped_acquire gil;
    delete keep;
  });
  return Tensor::adopt(std::move(owner), TensorView(const_cast<void*>(a.data()), Shape(dims), dt));
}

py::array array_from_tensor(const Tensor& t) {
  const Tensor c = t.contiguous();
  auto* keep = new Tensor(c);
  py::capsule base(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  std::vector<py::ssize_t> shape;
  for (int i = 0; i < c.rank(); ++i) shape.push_back(c.dim(i));
  if (c.dtype() == DType::F64)
    return py::array_t<double>(shape, static_cast<const double*>(c.view().raw_data()), base);
  QKV_CHECK(c.dtype() == DType::F32, InternalError, "array_from_tensor of ", describe(c));
  return py::array_t<float>(shape, static_cast<const float*>(c.view().raw_data()), base);
}

py::array array_from_floats(std::vector<float> values, const std::vector<int64_t>& shape) {
  auto* keep = new std::vector<float>(std::move(values));
  py::capsule base(keep, [](void* p) { delete static_cast<std::vector<float>*>(p); });
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  return py::array_t<float>(dims, keep->data(), base);
}

std::vector<int64_t> int_list(const py::handle& obj, const char* name) {
  if (py::isinstance<py::array>(obj)) {
    const auto a = py::reinterpret_borrow<py::array>(obj);
    if (a.dtype().kind() != 'i' && a.dtype().kind() != 'u')
      throw py::type_error(std::string(name) + " must hold integers, got an array of " +
                           py::str(a.dtype()).cast<std::string>());
    if (a.ndim() != 1)
      throw py::value_error(std::string(name) + " must be 1-dimensional, got " + describe_array(a));
  } else if (!py::isinstance<py::sequence>(obj) || py::isinstance<py::str>(obj)) {
    throw py::type_error(std::string(name) + " must be a sequence of ints, got " + type_name(obj));
  }
  std::vector<int64_t> out;
  for (const py::handle item : obj) {
    if (!py::isinstance<py::int_>(item) && !py::hasattr(item, "__index__"))
      throw py::type_error(std::string(name) + " must hold ints, got " + type_name(item));
    out.push_back(py::int_(py::reinterpret_borrow<py::object>(item)).cast<int64_t>());
  }
  return out;
}

}  // namespace qkv::python
