// The parts of the `qkv._qkv` extension, one per area; module.cpp calls each once.
#pragma once

#include <pybind11/pybind11.h>

namespace qkv::python {

namespace py = pybind11;

// qkv's typed errors (qkv::ShapeError, ...) as the exceptions of qkv/_errors.py.
void bind_errors(py::module_& m);
// qkv.attention: attend / attend_backward / multi_head_attention on numpy arrays.
void bind_attention(py::module_& attention);
// qkv.Vocab, qkv.Translator and their result types.
void bind_translator(py::module_& m);
// qkv.eval: bleu, chrf, by_length.
void bind_eval(py::module_& eval);
// qkv.train.
void bind_train(py::module_& m);

}  // namespace qkv::python
