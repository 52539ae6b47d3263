// qkv.eval: corpus BLEU and chrF (sacreBLEU's defaults) and their per-length buckets, the
// same library calls `qkv eval` makes, so the scores and their text are the CLI's.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "qkv/eval/bleu.h"
#include "qkv/eval/bootstrap.h"
#include "qkv/eval/by_length.h"
#include "qkv/eval/chrf.h"

namespace qkv::python {
namespace {

std::vector<std::string> strings(const py::handle& obj, const char* name) {
  if (py::isinstance<py::str>(obj))
    throw py::type_error(std::string(name) + " must be a list of strings, got one string");
  try {
    return obj.cast<std::vector<std::string>>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(name) + " must be a list of strings");
  }
}

// References as sacreBLEU takes them: one stream (a list of str, one per hypothesis) or
// several (a list of such lists: refs[k][i] is the k-th reference of sentence i).
std::vector<std::vector<std::string>> reference_streams(const py::handle& refs) {
  if (py::isinstance<py::sequence>(refs) && !py::isinstance<py::str>(refs) && py::len(refs) > 0 &&
      py::isinstance<py::str>(refs[py::int_(0)]))
    return {strings(refs, "refs")};
  if (py::isinstance<py::str>(refs) || !py::isinstance<py::sequence>(refs))
    throw py::type_error(
        "refs must be a list of str (one reference per hypothesis) or a list "
        "of such lists (several reference streams)");
  std::vector<std::vector<std::string>> streams;
  for (const py::handle stream : refs) streams.push_back(strings(stream, "refs[k]"));
  return streams;
}

eval::BleuScore bleu(const py::object& hyps, const py::object& refs) {
  const std::vector<std::string> h = strings(hyps, "hyps");
  const auto r = reference_streams(refs);
  py::gil_scoped_release release;
  return eval::corpus_bleu(h, r);
}

eval::ChrfScore chrf(const py::object& hyps, const py::object& refs) {
  const std::vector<std::string> h = strings(hyps, "hyps");
  const auto r = reference_streams(refs);
  py::gil_scoped_release release;
  return eval::corpus_chrf(h, r);
}

std::vector<eval::LengthBucket> by_length(const py::object& sources, const py::object& hyps,
                                          const py::object& refs, int64_t bootstrap) {
  const std::vector<std::string> s = strings(sources, "sources");
  const std::vector<std::string> h = strings(hyps, "hyps");
  const auto r = reference_streams(refs);
  if (bootstrap < 0) throw py::value_error("bootstrap must be >= 0 (0: no intervals)");
  eval::ByLengthOptions o;
  if (bootstrap > 0) o.bootstrap = eval::BootstrapOptions{.samples = bootstrap};
  py::gil_scoped_release release;
  return eval::score_by_length(s, h, r, o);
}

}  // namespace

void bind_eval(py::module_& m) {
  using namespace pybind11::literals;
  py::class_<eval::BleuScore>(m, "BleuScore", "Corpus BLEU with its statistics.")
      .def_readonly("score", &eval::BleuScore::score, "BLEU in [0, 100].")
      .def_readonly("precisions", &eval::BleuScore::precisions,
                    "n-gram precisions in percent, n = 1..4.")
      .def_readonly("counts", &eval::BleuScore::counts, "Clipped n-gram matches.")
      .def_readonly("totals", &eval::BleuScore::totals, "Hypothesis n-grams.")
      .def_readonly("bp", &eval::BleuScore::bp, "Brevity penalty.")
      .def_readonly("ratio", &eval::BleuScore::ratio, "hyp_len / ref_len.")
      .def_readonly("hyp_len", &eval::BleuScore::hyp_len)
      .def_readonly("ref_len", &eval::BleuScore::ref_len)
      .def_readonly("signature", &eval::BleuScore::signature,
                    "sacreBLEU's signature, e.g. nrefs:1|case:mixed|eff:no|tok:13a|...")
      .def("format", &eval::BleuScore::format, "width"_a = 2, "with_signature"_a = false,
           "sacreBLEU's text line; `qkv eval` prints format(2, True).")
      .def("__str__", [](const eval::BleuScore& s) { return s.format(2, true); })
      .def("__repr__", [](const eval::BleuScore& s) { return "<" + s.format(2, false) + ">"; });
  py::class_<eval::ChrfScore>(m, "ChrfScore", "Corpus chrF.")
      .def_readonly("score", &eval::ChrfScore::score, "chrF in [0, 100].")
      .def_readonly("beta", &eval::ChrfScore::beta)
      .def_readonly("signature", &eval::ChrfScore::signature)
      .def("format", &eval::ChrfScore::format, "width"_a = 2, "with_signature"_a = false,
           "sacreBLEU's text line; `qkv eval` prints format(2, True).")
      .def("__str__", [](const eval::ChrfScore& s) { return s.format(2, true); })
      .def("__repr__", [](const eval::ChrfScore& s) { return "<" + s.format(2, false) + ">"; });
  py::class_<eval::ConfidenceInterval>(m, "ConfidenceInterval",
                                       "A 95% percentile-bootstrap interval of BLEU.")
      .def_readonly("low", &eval::ConfidenceInterval::low)
      .def_readonly("high", &eval::ConfidenceInterval::high);
  py::class_<eval::LengthBucket>(m, "LengthBucket", "The sentences of one source-length range.")
      .def_readonly("label", &eval::LengthBucket::label, "'1-10', ..., '41-50', '50+'.")
      .def_readonly("min_words", &eval::LengthBucket::min_words)
      .def_readonly("max_words", &eval::LengthBucket::max_words, "-1: no upper bound.")
      .def_readonly("count", &eval::LengthBucket::count, "Sentences in the bucket.")
      .def_readonly("bleu", &eval::LengthBucket::bleu, "BleuScore, None for an empty bucket.")
      .def_readonly("chrf", &eval::LengthBucket::chrf, "ChrfScore, None for an empty bucket.")
      .def_readonly("bleu_ci", &eval::LengthBucket::bleu_ci,
                    "Bootstrap interval of BLEU when asked for and the bucket is big enough.")
      .def("__repr__", [](const eval::LengthBucket& b) {
        return "LengthBucket('" + b.label + "', count=" + std::to_string(b.count) + ")";
      });
  m.def("bleu", &bleu, R"(Corpus BLEU exactly as sacreBLEU's defaults (and `qkv eval`) compute it.

    hyps: list of str; refs: list of str (one reference each) or list of lists (several
    reference streams, refs[k][i] the k-th reference of hyps[i]; '' for none). Returns a
    BleuScore: str(score) is the line `qkv eval` prints.)",
        "hyps"_a, "refs"_a);
  m.def("chrf", &chrf, "Corpus chrF2 as sacreBLEU's defaults compute it; arguments as bleu().",
        "hyps"_a, "refs"_a);
  m.def("by_length", &by_length, R"(BLEU and chrF per source-length bucket (`qkv eval --by-length`).

    sources: the source sentences (their word counts choose the buckets); hyps and refs as
    bleu(). bootstrap=N > 0 adds a 95% interval per bucket of >= 10 sentences. Returns the
    six LengthBuckets in order; format_by_length() prints them as the CLI does.)",
        "sources"_a, "hyps"_a, "refs"_a, py::kw_only(), "bootstrap"_a = 0);
  m.def(
      "format_by_length",
      [](const std::vector<eval::LengthBucket>& b) { return eval::format_by_length(b); },
      "buckets"_a, "The table `qkv eval --by-length` prints.");
}

}  // namespace qkv::python
