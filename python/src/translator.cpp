// qkv.Vocab and qkv.Translator: decode::Translator (the driver the CLI's translate, score
// and attend call) on Python strings, with its results as Python objects and the
// attention as numpy arrays. Every compute call runs without the GIL.
#include "qkv/decode/translator.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "arrays.h"
#include "bindings.h"
#include "qkv/base/thread_pool.h"
#include "qkv/decode/alignment.h"

namespace qkv::python {
namespace {

namespace fs = std::filesystem;
using decode::Translator;

// A Translator with the lock that makes "calls on one Translator run one at a time"
// (translator.h) hold for Python threads too: two threads calling one Translator take
// turns instead of racing on its model; two Translators never wait for each other.
struct LockedTranslator {
  Translator translator;
  std::unique_ptr<std::mutex> busy = std::make_unique<std::mutex>();
};

// ---- result types ----------------------------------------------------------------------

struct AttentionArrays {
  int64_t layers = 0, heads = 0;
  std::vector<std::string> source_tokens, target_tokens;
  py::array weights;  // float32 [layers, heads, target, source]
};

struct Hypothesis {
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<std::string> pieces;
  double score = 0, log_prob = 0;
  py::array token_log_probs;
  bool finished = false;
  std::optional<std::string> alignment;
  std::optional<AttentionArrays> attention;
};

struct Translation {
  std::optional<std::string> skipped;  // why it was not translated; None when it was
  int64_t token_count = 0;
  std::vector<int32_t> source;  // the model's source row (tokens, then EOS)
  std::vector<Hypothesis> hypotheses;
};

struct Score {
  std::optional<std::string> skipped;
  double log_prob = 0;
  py::array token_log_probs;
};

std::optional<std::string> skip_text(decode::SkipReason reason, int64_t tokens, int64_t limit) {
  if (reason == decode::SkipReason::None) return std::nullopt;
  return decode::describe(reason, tokens, limit);
}

AttentionArrays attention_arrays(decode::AttentionMaps maps) {
  AttentionArrays a{
      maps.layers, maps.heads, std::move(maps.source_tokens), std::move(maps.target_tokens), {}};
  const int64_t t = int64_t(a.target_tokens.size()), s = int64_t(a.source_tokens.size());
  a.weights = array_from_floats(std::move(maps.weights), {a.layers, a.heads, t, s});
  return a;
}

// ---- translate -------------------------------------------------------------------------

struct TranslateArgs {
  decode::TranslateOptions options;
  bool return_attention = false;
  std::optional<std::string> alignment;  // "hard" | "soft"
};

// What the search produced, before any Python object exists (the GIL is released).
struct RawTranslation {
  decode::SentenceResult result;
  std::vector<std::optional<std::string>> alignments;      // per hypothesis
  std::vector<std::optional<decode::AttentionMaps>> maps;  // per hypothesis
};

std::vector<RawTranslation> translate_raw(const Translator& tr,
                                          const std::vector<std::string>& sentences,
                                          const TranslateArgs& args) {
  std::vector<decode::SentenceResult> results = tr.translate(sentences, args.options);
  std::vector<RawTranslation> out;
  for (decode::SentenceResult& r : results) {
    RawTranslation raw{std::move(r), {}, {}};
    for (const decode::TranslatedHypothesis& h : raw.result.hypotheses) {
      std::optional<std::string> alignment;
      if (args.alignment) {  // translate_command.cpp's alignment_suffix, without " ||| "
        const auto words =
            decode::word_attention(tr.vocab(), raw.result.source, h.tokens, h.attention);
        alignment = *args.alignment == "hard" ? decode::hard_alignment(words)
                                              : decode::soft_alignment(words);
      }
      raw.alignments.push_back(std::move(alignment));
      std::optional<decode::AttentionMaps> maps;
      if (args.return_attention) maps = tr.attention_maps(raw.result, h);
      raw.maps.push_back(std::move(maps));
    }
    out.push_back(std::move(raw));
  }
  return out;
}

Translation to_python(const Translator& tr, RawTranslation raw) {
  const decode::SentenceResult& r = raw.result;
  Translation t{skip_text(r.skipped, r.token_count, r.token_limit), r.token_count, r.source, {}};
  for (size_t i = 0; i < r.hypotheses.size(); ++i) {
    const decode::TranslatedHypothesis& h = r.hypotheses[i];
    Hypothesis p;
    p.text = h.text;
    p.tokens = h.tokens;
    p.pieces = tr.vocab().pieces(h.tokens);
    p.score = h.score;
    p.log_prob = h.log_prob;
    p.token_log_probs = array_from_floats(h.token_log_probs, {int64_t(h.token_log_probs.size())});
    p.finished = h.finished;
    p.alignment = std::move(raw.alignments[i]);
    if (raw.maps[i]) p.attention = attention_arrays(std::move(*raw.maps[i]));
    t.hypotheses.push_back(std::move(p));
  }
  return t;
}

std::vector<std::string> string_list(const py::handle& obj, const char* name) {
  if (py::isinstance<py::str>(obj))
    throw py::type_error(std::string(name) +
                         " must be a list of strings, got one string (wrap it: [text])");
  try {
    return obj.cast<std::vector<std::string>>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(name) + " must be a list of strings");
  }
}

std::vector<Translation> translate(LockedTranslator& locked, const py::object& sentences,
                                   int64_t beam_size, int64_t n_best, double normalize,
                                   double coverage_penalty, double max_length_factor,
                                   int64_t max_length, int64_t mini_batch, bool return_attention,
                                   std::optional<std::string> alignment, int64_t alignment_layer,
                                   int64_t alignment_head) {
  const Translator& tr = locked.translator;
  const std::vector<std::string> texts = string_list(sentences, "sentences");
  if (alignment && *alignment != "hard" && *alignment != "soft")
    throw py::value_error("alignment='" + *alignment + "': use 'hard', 'soft' or None");
  TranslateArgs args;
  decode::BeamSearchOptions& s = args.options.search;
  s.beam_size = beam_size;
  s.n_best = n_best;
  s.normalize = normalize;
  s.coverage_penalty = coverage_penalty;
  s.max_length_factor = max_length_factor;
  s.keep_attention = alignment.has_value();
  s.attention = {alignment_layer, alignment_head};
  args.options.max_length = max_length;
  args.options.mini_batch = mini_batch;
  args.options.memory_advice = "reduce beam_size, mini_batch, max_length_factor or max_length";
  args.return_attention = return_attention;
  args.alignment = std::move(alignment);
  std::vector<RawTranslation> raw;
  {
    py::gil_scoped_release release;
    const std::lock_guard<std::mutex> one_call_at_a_time(*locked.busy);
    raw = translate_raw(tr, texts, args);
  }
  std::vector<Translation> out;
  for (RawTranslation& r : raw) out.push_back(to_python(tr, std::move(r)));
  return out;
}

std::vector<Score> score(LockedTranslator& locked, const py::object& sources,
                         const py::object& targets, int64_t max_length, int64_t mini_batch) {
  const std::vector<std::string> src = string_list(sources, "sources");
  const std::vector<std::string> tgt = string_list(targets, "targets");
  decode::ScoreOptions o;
  o.max_length = max_length;
  o.mini_batch = mini_batch;
  std::vector<decode::ScoreResult> results;
  {
    py::gil_scoped_release release;
    const std::lock_guard<std::mutex> one_call_at_a_time(*locked.busy);
    results = locked.translator.score(src, tgt, o);
  }
  std::vector<Score> out;
  for (decode::ScoreResult& r : results)
    out.push_back(
        {skip_text(r.skipped, r.token_count, r.token_limit), r.log_prob,
         array_from_floats(std::move(r.token_log_probs), {int64_t(r.token_log_probs.size())})});
  return out;
}

LockedTranslator load(const fs::path& path, int threads) {
  if (threads < 0) throw py::value_error("threads must be >= 0 (0: QKV_NUM_THREADS or all cores)");
  if (threads > 0) set_num_threads(threads);
  py::gil_scoped_release release;
  return LockedTranslator{Translator::load(path)};
}

py::object config_dict(const LockedTranslator& t) {
  return py::module_::import("json").attr("loads")(models::to_json(t.translator.model().config()));
}

std::string quoted(const std::string& s) {
  return py::repr(py::str(s)).cast<std::string>();
}

void bind_results(py::module_& m) {
  py::class_<AttentionArrays>(m, "AttentionMaps",
                              "Every attention distribution of one hypothesis: weights "
                              "[layers, heads, target, source] (float32) with the token "
                              "strings of both axes.")
      .def_readonly("layers", &AttentionArrays::layers)
      .def_readonly("heads", &AttentionArrays::heads)
      .def_readonly("source_tokens", &AttentionArrays::source_tokens,
                    "The source pieces, then '</s>': the last axis.")
      .def_readonly("target_tokens", &AttentionArrays::target_tokens,
                    "The hypothesis' pieces, then '</s>' for the EOS step (absent when it was "
                    "cut at the length limit): the third axis.")
      .def_readonly("weights", &AttentionArrays::weights)
      .def("__repr__", [](const AttentionArrays& a) {
        return "AttentionMaps(layers=" + std::to_string(a.layers) +
               ", heads=" + std::to_string(a.heads) +
               ", target=" + std::to_string(a.target_tokens.size()) +
               ", source=" + std::to_string(a.source_tokens.size()) + ")";
      });
  py::class_<Hypothesis>(m, "Hypothesis", "One translation of a sentence.")
      .def_readonly("text", &Hypothesis::text, "Detokenised text.")
      .def_readonly("tokens", &Hypothesis::tokens, "Output ids, without BOS and EOS.")
      .def_readonly("pieces", &Hypothesis::pieces, "The subword pieces of tokens.")
      .def_readonly("score", &Hypothesis::score,
                    "The ranking score: log_prob / length^normalize plus the coverage penalty "
                    "(the n-best score of `qkv translate`).")
      .def_readonly("log_prob", &Hypothesis::log_prob, "Sum of token_log_probs.")
      .def_readonly("token_log_probs", &Hypothesis::token_log_probs,
                    "float32 [S]: each token's log-probability, then EOS's when finished.")
      .def_readonly("finished", &Hypothesis::finished, "Ended with EOS (not cut at the limit).")
      .def_readonly("alignment", &Hypothesis::alignment,
                    "Word alignment as `qkv translate --alignment` writes it (after ' ||| '), "
                    "or None when not asked for.")
      .def_readonly("attention", &Hypothesis::attention,
                    "AttentionMaps with return_attention=True, else None.")
      .def("__repr__", [](const Hypothesis& h) {
        return "Hypothesis(" + quoted(h.text) + ", score=" + std::to_string(h.score) + ")";
      });
  py::class_<Translation>(m, "Translation", "A sentence's translation result.")
      .def_readonly("skipped", &Translation::skipped,
                    "Why the sentence was not translated ('empty line', ...), else None.")
      .def_property_readonly("ok", [](const Translation& t) { return !t.skipped; })
      .def_readonly("token_count", &Translation::token_count,
                    "Source subword tokens (EOS not counted).")
      .def_readonly("source", &Translation::source,
                    "The model's source row: the token ids, then EOS.")
      .def_readonly("hypotheses", &Translation::hypotheses, "Best first; empty when skipped.")
      .def_property_readonly(
          "text",
          [](const Translation& t) { return t.hypotheses.empty() ? "" : t.hypotheses[0].text; },
          "The best hypothesis' text ('' when skipped), as `qkv translate` prints it.")
      .def("__repr__", [](const Translation& t) {
        return t.skipped ? "Translation(skipped=" + quoted(*t.skipped) + ")"
                         : "Translation(" + quoted(t.hypotheses[0].text) + ")";
      });
  py::class_<Score>(m, "Score", "The model's log-probability of a given translation.")
      .def_readonly("skipped", &Score::skipped, "Why the pair was not scored, else None.")
      .def_readonly("log_prob", &Score::log_prob, "Raw sum over the tokens and EOS.")
      .def_readonly("token_log_probs", &Score::token_log_probs,
                    "float32 [T + 1]: each target token, then EOS.")
      .def_property_readonly(
          "per_token",
          [](const Score& s) {
            return s.token_log_probs.size() ? s.log_prob / double(s.token_log_probs.size()) : 0.0;
          },
          "log_prob divided by the number of tokens and EOS (`qkv score`'s second number).")
      .def("__repr__", [](const Score& s) {
        return s.skipped ? "Score(skipped=" + quoted(*s.skipped) + ")"
                         : "Score(log_prob=" + std::to_string(s.log_prob) + ")";
      });
}

void bind_vocab(py::module_& m) {
  py::class_<data::Vocab>(m, "Vocab", "A SentencePiece vocabulary (vocab.spm).")
      .def(py::init(&data::Vocab::load), py::arg("path"),
           "Loads a vocabulary file; qkv.IoError naming it when it cannot.")
      .def("encode", &data::Vocab::encode, py::arg("text"), "Text -> subword ids.")
      .def("encode_pieces", &data::Vocab::encode_pieces, py::arg("text"),
           "Text -> subword piece strings.")
      .def(
          "decode",
          [](const data::Vocab& v, const std::vector<int32_t>& ids) { return v.decode(ids); },
          py::arg("ids"), "Ids -> detokenised text.")
      .def(
          "pieces",
          [](const data::Vocab& v, const std::vector<int32_t>& ids) { return v.pieces(ids); },
          py::arg("ids"), "Ids -> their piece strings.")
      .def("piece", &data::Vocab::piece, py::arg("id"), "The piece string of one id.")
      .def("id_of", &data::Vocab::id_of, py::arg("piece"),
           "The id of a piece string (the unknown id when it is not in the vocabulary).")
      .def("__len__", &data::Vocab::size, "The number of pieces.")
      .def_property_readonly("size", &data::Vocab::size)
      .def_property_readonly("pad_id", &data::Vocab::pad_id)
      .def_property_readonly("unk_id", &data::Vocab::unk_id)
      .def_property_readonly("bos_id", &data::Vocab::bos_id)
      .def_property_readonly("eos_id", &data::Vocab::eos_id)
      .def_property_readonly("fingerprint", &data::Vocab::fingerprint);
}

}  // namespace

void bind_translator(py::module_& m) {
  using namespace pybind11::literals;
  bind_results(m);
  bind_vocab(m);
  py::class_<LockedTranslator>(m, "Translator",
                               R"(A trained model with its vocabulary, ready to translate.

    Translator(model_dir, threads=0): model_dir is a directory written by `qkv train`
    (its model.safetensors and vocab.spm) or a model file such as
    DIR/model.best.safetensors. threads > 0 sets the size of qkv's one process-wide thread
    pool (0 leaves it: QKV_NUM_THREADS or all cores). Calls on one Translator from several
    threads take turns; two Translators (loaded separately) translate in two Python
    threads at once, since every call releases the GIL.)")
      .def(py::init(&load), "model_dir"_a, "threads"_a = 0)
      .def("translate", &translate, R"(Translates sentences with beam search.

    sentences: a list of str. Returns one qkv.Translation per sentence, in order (a blank or
    too long sentence gives one with .skipped set and no hypotheses). The options and their
    defaults are `qkv translate`'s flags: beam_size (1: greedy), n_best (<= beam_size),
    normalize (length normalisation alpha), coverage_penalty (beta, Wu et al. 2016),
    max_length_factor (outputs have at most factor x source tokens + 5), max_length (longer
    sources are skipped), mini_batch. alignment='hard'|'soft' fills each hypothesis'
    .alignment as `--alignment` writes it (alignment_layer / alignment_head: -1 the last
    layer / the mean over heads); return_attention=True fills .attention with every
    layer's and head's weights.)",
           "sentences"_a, py::kw_only(), "beam_size"_a = 5, "n_best"_a = 1, "normalize"_a = 0.6,
           "coverage_penalty"_a = 0.0, "max_length_factor"_a = 2.0, "max_length"_a = 1000,
           "mini_batch"_a = 32, "return_attention"_a = false, "alignment"_a = py::none(),
           "alignment_layer"_a = -1, "alignment_head"_a = -1)
      .def("score", &score, R"(The model's log-probability of each translation (forced decoding).

    sources, targets: lists of str of one length. Returns one qkv.Score per pair:
    .log_prob and .per_token are `qkv score`'s two numbers.)",
           "sources"_a, "targets"_a, py::kw_only(), "max_length"_a = 1000, "mini_batch"_a = 32)
      .def_property_readonly("config", &config_dict,
                             "The model's configuration (a dict; the JSON of model.safetensors).")
      .def_property_readonly(
          "vocab", [](const LockedTranslator& t) { return t.translator.vocab(); },
          "The model's qkv.Vocab.")
      .def_property_readonly(
          "model_file", [](const LockedTranslator& t) { return t.translator.file(); },
          "The model file loaded.")
      .def_property_readonly(
          "update", [](const LockedTranslator& t) { return t.translator.info().update; },
          "The training update the model was saved at.")
      .def_property_readonly(
          "qkv_version", [](const LockedTranslator& t) { return t.translator.info().qkv_version; },
          "The qkv version that wrote the model file.")
      .def_property_readonly(
          "attends",
          [](const LockedTranslator& t) { return models::attends(t.translator.model().config()); },
          "Whether the model attends over the source (False: an rnn without attention).")
      .def("__repr__", [](const LockedTranslator& t) {
        return "Translator(" + quoted(t.translator.file().string()) + ", " +
               std::string(models::to_string(t.translator.model().config().type)) + ")";
      });
}

}  // namespace qkv::python
