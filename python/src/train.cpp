// qkv.train: one training session (experiment::run_training_session, what `qkv train`
// runs) from the CLI's options, with a Python progress callback and Ctrl-C. The loop runs
// without the GIL; after every update it takes the GIL briefly to call the callback and
// to let Python see a pending signal: a KeyboardInterrupt (or an exception from the
// callback) stops training after that update, the checkpoint is saved as `qkv train`
// saves it on Ctrl-C, and then the exception is raised.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "qkv/experiment/train_flags.h"
#include "qkv/experiment/train_session.h"

namespace qkv::python {
namespace {

struct Progress {
  std::atomic<bool> stop{false};
  std::optional<py::error_already_set> error;  // raised once the checkpoint is saved
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int64_t tokens = 0;
};

py::dict update_dict(const train::UpdateRecord& r, double tokens_per_second) {
  py::dict d;
  d["update"] = r.update;
  d["epoch"] = r.epoch;
  d["loss"] = r.loss;
  d["applied"] = r.applied;
  d["grad_norm"] = r.grad_norm;
  d["learning_rate"] = r.learning_rate;
  d["src_tokens"] = r.src_tokens;
  d["tgt_tokens"] = r.tgt_tokens;
  d["tokens_per_second"] = tokens_per_second;
  return d;
}

void on_update(Progress& progress, const py::object& callback, const train::UpdateRecord& r) {
  progress.tokens += r.src_tokens + r.tgt_tokens;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - progress.start).count();
  py::gil_scoped_acquire gil;
  if (progress.error) return;
  try {
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (!callback.is_none())
      callback(update_dict(r, seconds > 0 ? double(progress.tokens) / seconds : 0.0));
  } catch (py::error_already_set& e) {
    progress.error.emplace(std::move(e));
    progress.stop.store(true);
  }
}

const char* reason_name(train::StopReason r) {
  switch (r) {
    case train::StopReason::Updates:
      return "updates";
    case train::StopReason::Epochs:
      return "epochs";
    case train::StopReason::WallTime:
      return "wall_time";
    case train::StopReason::EarlyStopping:
      return "early_stopping";
    case train::StopReason::Interrupted:
      return "interrupted";
  }
  return "unknown";
}

py::dict summary_dict(const train::TrainSummary& s) {
  py::dict d;
  d["stop_reason"] = reason_name(s.reason);
  d["stop_message"] = std::string(train::to_string(s.reason));
  d["update"] = s.progress.update;
  d["epoch"] = s.progress.position.epoch;
  d["tokens_seen"] = s.progress.tokens_seen;
  d["wall_seconds"] = s.progress.wall_seconds;
  d["best_valid_loss"] =
      s.progress.best_valid_loss ? py::object(py::float_(*s.progress.best_valid_loss)) : py::none();
  d["best_valid_bleu"] = s.progress.best_valid_bleu;
  return d;
}

py::dict run(const std::vector<std::string>& args, const py::object& callback, bool log) {
  const cli::ParsedOptions p = experiment::train_options().parse(args);
  Progress progress;
  experiment::TrainingHooks hooks;
  hooks.log = log ? &std::cerr : nullptr;
  hooks.stop_requested = &progress.stop;
  hooks.on_update = [&](const train::UpdateRecord& r) { on_update(progress, callback, r); };
  train::TrainSummary summary;
  {
    py::gil_scoped_release release;
    summary = experiment::run_training_session(p, hooks);
  }
  if (progress.error) throw std::move(*progress.error);
  return summary_dict(summary);
}

}  // namespace

void bind_train(py::module_& m) {
  m.def("_train", &run, py::arg("args"), py::arg("callback"), py::arg("log"),
        "qkv.train's engine: `qkv train`'s arguments (without the program name).");
  m.def(
      "_train_help",
      [] {
        return experiment::train_options().format_help("qkv", "train",
                                                       "qkv.train's options: the flags of "
                                                       "`qkv train`, in snake_case.");
      },
      "Every option of qkv.train with its default, as `qkv train --help` lists it.");
}

}  // namespace qkv::python
