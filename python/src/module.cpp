// The `qkv._qkv` extension: the library's API on Python objects and numpy arrays. The
// package qkv (qkv/__init__.py) re-exports it; users import qkv, not this.
#include <pybind11/pybind11.h>

#include "bindings.h"

PYBIND11_MODULE(_qkv, m) {
  namespace py = pybind11;
  m.doc() = "The compiled part of qkv; import qkv instead.";
  m.attr("__version__") = QKV_VERSION;  // CMake's project(VERSION), the one place it is set
  qkv::python::bind_errors(m);
  py::module_ attention = m.def_submodule("attention", "Attention on numpy arrays.");
  qkv::python::bind_attention(attention);
  qkv::python::bind_translator(m);
  py::module_ eval = m.def_submodule("eval", "BLEU and chrF as sacreBLEU computes them.");
  qkv::python::bind_eval(eval);
  qkv::python::bind_train(m);
}
