// qkv::Error and its kinds become the exceptions qkv/_errors.py defines (each a subclass of
// qkv.Error and of the built-in exception a Python user would catch), with the C++
// message unchanged.
#include <pybind11/pybind11.h>

#include <exception>

#include "bindings.h"
#include "qkv/base/error.h"

namespace qkv::python {
namespace {

// Raises qkv._errors.<name>(message). The classes are looked up when an error happens, so
// the extension has no import-order dependency on the package.
void raise_as(const char* name, const std::exception& e) {
  const py::object cls = py::module_::import("qkv._errors").attr(name);
  PyErr_SetObject(cls.ptr(), py::str(e.what()).ptr());
}

}  // namespace

void bind_errors(py::module_& /*m*/) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ShapeError& e) {
      raise_as("ShapeError", e);
    } catch (const qkv::ValueError& e) {
      raise_as("InvalidValueError", e);
    } catch (const qkv::IndexError& e) {
      raise_as("OutOfRangeError", e);
    } catch (const IoError& e) {
      raise_as("IoError", e);
    } catch (const ConfigError& e) {
      raise_as("ConfigError", e);
    } catch (const ResourceError& e) {
      raise_as("ResourceError", e);
    } catch (const InternalError& e) {
      raise_as("InternalError", e);
    } catch (const Error& e) {
      raise_as("Error", e);
    }
  });
}

}  // namespace qkv::python
