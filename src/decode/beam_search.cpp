#include "qkv/decode/beam_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "detail/rows.h"
#include "detail/top_k.h"
#include "qkv/autograd/packed_weights.h"
#include "qkv/base/error.h"
#include "qkv/base/field_error.h"
#include "qkv/decode/memory.h"

namespace qkv::decode {
namespace {

// A never-attended source token costs β·log(1e-6) instead of -inf (see the header).
constexpr double kCoverageFloor = 1e-6;

// One node of a sentence's search tree: a token and its back pointer. Hypotheses that
// share a prefix share its nodes; a hypothesis is read back from its last node.
struct Node {
  int32_t token = 0;
  int32_t parent = -1;     // the previous token's node; -1 for the first token
  float log_prob = 0;      // log p(token | the prefix)
  int64_t attention = -1;  // offset of the step's attention row in Sentence::attention
};

struct Live {
  int32_t node = -1;  // last token's node (-1: nothing decoded yet)
  double log_prob = 0;
  int32_t row = 0;  // its decoder-state row (the step's output row)
};

struct Finished {
  int32_t node = -1;
  bool eos = false;  // ended with EOS (else cut at the length limit)
};

struct Sentence {
  int64_t source_length = 0;
  int64_t limit = 0;  // most tokens, EOS not counted
  int64_t width = 0;  // beam_size minus the finished hypotheses
  std::vector<Node> nodes;
  std::vector<float> attention;  // [nodes with attention, source_length]
  std::vector<Live> live;        // best first (the search's order; rows: Live::row)
  std::vector<Finished> finished;
};

// A continuation of live hypothesis `row` (index into Sentence::live) by `token`.
struct Candidate {
  double log_prob = 0;  // cumulative
  int32_t row = 0;
  int32_t token = 0;
};

// The search order: higher log-probability first, then the earlier row, then the lower id.
bool better(const Candidate& a, const Candidate& b) {
  if (a.log_prob != b.log_prob) return a.log_prob > b.log_prob;
  if (a.row != b.row) return a.row < b.row;
  return a.token < b.token;
}

// What one step gives every sentence: lp [rows, V] and attention [rows, Ts] (nullptr
// when not kept) are the step's output, proposals each row's top-k ids; a live
// hypothesis's row is its Live::row.
struct StepRows {
  const float* log_probs = nullptr;
  int64_t vocab = 0;
  const std::vector<std::vector<int32_t>>* proposals = nullptr;
  const float* attention = nullptr;
  int64_t attention_stride = 0;
};

// Advances sentence `s` by one step: keeps its `width` best continuations and finishes
// the EOS ones (and all of them at the length limit). The new live hypotheses' `row` is
// their parent's row in the step's output until place() gives them their own.
void expand(Sentence& s, const StepRows& in, int64_t step, int32_t eos_id) {
  const int64_t k = s.width;
  std::vector<Candidate> candidates;
  for (size_t r = 0; r < s.live.size(); ++r) {
    const int32_t row = s.live[r].row;
    const float* lp = in.log_probs + int64_t(row) * in.vocab;
    for (const int32_t id : (*in.proposals)[size_t(row)])
      candidates.push_back({s.live[r].log_prob + double(lp[id]), int32_t(r), id});
  }
  const auto keep = std::min<size_t>(size_t(k), candidates.size());
  std::partial_sort(candidates.begin(), candidates.begin() + ptrdiff_t(keep), candidates.end(),
                    better);
  std::vector<Live> next;
  for (size_t i = 0; i < keep; ++i) {
    const Candidate& c = candidates[i];
    const int32_t row = s.live[size_t(c.row)].row;
    Node node{c.token, s.live[size_t(c.row)].node, in.log_probs[int64_t(row) * in.vocab + c.token],
              -1};
    if (in.attention != nullptr) {
      node.attention = int64_t(s.attention.size());
      const float* weights = in.attention + int64_t(row) * in.attention_stride;
      s.attention.insert(s.attention.end(), weights, weights + s.source_length);
    }
    s.nodes.push_back(node);
    const auto id = int32_t(s.nodes.size() - 1);
    if (c.token == eos_id) {
      s.finished.push_back({id, true});
      --s.width;
    } else {
      next.push_back({id, c.log_prob, row});
    }
  }
  if (step + 1 >= s.limit) {  // the length limit: what is still live ends here
    for (const Live& l : next) s.finished.push_back({l.node, false});
    next.clear();
  }
  s.live = std::move(next);
}

// Gives every live hypothesis its row in the next step's state of `rows` rows (rows
// need not follow sentences or ranks: each row is decoded on its own): its parent's
// row when that is below `rows` and no earlier hypothesis (by sentence, then rank) took
// it, else the lowest free one. Beam search mostly continues a parent with one child,
// and sentences that finish or narrow leave their rows to others, so most rows stay
// where their self-attention caches already hold them and the state's reorder copies
// only the rest (ranks and sentence blocks had moved most rows every step). Returns, per
// new row, the old row it continues.
std::vector<int64_t> place(std::vector<Sentence>& sentences, int64_t rows) {
  std::vector<int64_t> parent_of(size_t(rows), -1);
  std::vector<Live*> unplaced;
  for (Sentence& s : sentences) {
    for (Live& l : s.live) {
      if (l.row < rows && parent_of[size_t(l.row)] < 0)
        parent_of[size_t(l.row)] = l.row;
      else
        unplaced.push_back(&l);
    }
  }
  int32_t free_row = 0;
  for (Live* l : unplaced) {
    while (parent_of[size_t(free_row)] >= 0) ++free_row;
    parent_of[size_t(free_row)] = l->row;
    l->row = free_row;
  }
  return parent_of;
}

// Reads a finished hypothesis back from its last node and scores it.
Hypothesis trace_back(const Sentence& s, const Finished& f, int32_t eos_id,
                      const BeamSearchOptions& options) {
  std::vector<int32_t> chain;  // node indices, last first
  for (int32_t n = f.node; n >= 0; n = s.nodes[size_t(n)].parent) chain.push_back(n);
  std::reverse(chain.begin(), chain.end());
  Hypothesis h;
  h.source_length = s.source_length;
  h.finished = f.eos;
  std::vector<double> coverage(size_t(s.source_length), 0.0);
  for (const int32_t n : chain) {
    const Node& node = s.nodes[size_t(n)];
    if (!(f.eos && n == chain.back())) h.tokens.push_back(node.token);
    QKV_DCHECK(node.token != eos_id || n == chain.back());
    h.token_log_probs.push_back(node.log_prob);
    h.log_prob += double(node.log_prob);
    if (node.attention < 0) continue;
    const float* row = s.attention.data() + node.attention;
    h.attention.insert(h.attention.end(), row, row + s.source_length);
    for (int64_t j = 0; j < s.source_length; ++j) coverage[size_t(j)] += double(row[j]);
  }
  const auto length = double(h.token_log_probs.size());
  h.score = h.log_prob / std::pow(length, options.normalize);
  if (options.coverage_penalty > 0) {
    double penalty = 0;
    for (const double c : coverage) penalty += std::log(std::clamp(c, kCoverageFloor, 1.0));
    h.score += options.coverage_penalty * penalty;
  }
  if (!options.keep_attention) h.attention.clear();
  return h;
}

std::vector<Hypothesis> best_of(const Sentence& s, int32_t eos_id,
                                const BeamSearchOptions& options) {
  std::vector<Hypothesis> all;
  for (const Finished& f : s.finished) all.push_back(trace_back(s, f, eos_id, options));
  // Stable: equal scores keep the order in which they finished.
  std::stable_sort(all.begin(), all.end(),
                   [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
  if (int64_t(all.size()) > options.n_best) all.resize(size_t(options.n_best));
  return all;
}

}  // namespace

int64_t max_target_length(const BeamSearchOptions& options, int64_t source_length,
                          const models::ModelConfig& config) {
  // Clamped in double first: a huge factor must not overflow the integer.
  const double scaled = std::min(std::floor(options.max_length_factor * double(source_length)),
                                 double(int64_t{1} << 40));
  int64_t limit = int64_t(scaled) + options.max_length_extra;
  if (options.max_length > 0) limit = std::min(limit, options.max_length);
  if (config.type == models::ModelType::Transformer) limit = std::min(limit, config.max_positions);
  return std::max<int64_t>(limit, 1);
}

void validate(const BeamSearchOptions& o) {
  QKV_CHECK(o.beam_size >= 1, FieldError, "{beam_size} ", o.beam_size, " must be >= 1");
  QKV_CHECK(o.n_best >= 1, FieldError, "{n_best} ", o.n_best, " must be >= 1");
  QKV_CHECK(o.n_best <= o.beam_size, FieldError, "{n_best} ", o.n_best, " exceeds {beam_size} ",
            o.beam_size, "; the search keeps only beam-size hypotheses (raise {beam_size})");
  QKV_CHECK(std::isfinite(o.normalize) && o.normalize >= 0, FieldError, "{normalize} ", o.normalize,
            " must be a finite value >= 0");
  QKV_CHECK(std::isfinite(o.coverage_penalty) && o.coverage_penalty >= 0, FieldError,
            "{coverage_penalty} ", o.coverage_penalty, " must be a finite value >= 0");
  QKV_CHECK(std::isfinite(o.max_length_factor) && o.max_length_factor >= 0, FieldError,
            "{max_length_factor} ", o.max_length_factor, " must be a finite value >= 0");
  QKV_CHECK(o.max_length_extra >= 0, FieldError, "{max_length_extra} ", o.max_length_extra,
            " must be >= 0");
  // Not {max_length}: the front ends' max_length is TranslateOptions' source-side limit.
  QKV_CHECK(o.max_length >= 0, FieldError, "the output length cap ", o.max_length,
            " must be >= 0 (0: no cap)");
}

void validate(const BeamSearchOptions& o, const models::ModelConfig& c) {
  validate(o);
  QKV_CHECK(o.coverage_penalty == 0 || models::attends(c), FieldError, "{coverage_penalty} ",
            o.coverage_penalty, ": the model is an rnn without attention, which has no coverage");
  const bool transformer = c.type == models::ModelType::Transformer;
  const int64_t layers = transformer ? c.dec_depth : 1, heads = transformer ? c.heads : 1;
  QKV_CHECK(o.attention.layer >= -1 && o.attention.layer < layers, FieldError, "{alignment_layer} ",
            o.attention.layer, ": the model has ", layers, " attention layer(s): 0..", layers - 1,
            ", or -1 for the last");
  QKV_CHECK(o.attention.head >= -1 && o.attention.head < heads, FieldError, "{alignment_head} ",
            o.attention.head, ": the model has ", heads, " attention head(s): 0..", heads - 1,
            ", or -1 for their mean");
}

std::vector<std::vector<Hypothesis>> beam_search(models::Seq2Seq& model, const Tensor& src,
                                                 std::span<const int64_t> src_lengths,
                                                 const BeamSearchOptions& options) {
  const models::ModelConfig& config = model.config();
  validate(options, config);
  if (src_lengths.empty()) return {};
  check_beam_search_memory(config, options, int64_t(src_lengths.size()), src.dim(1));
  const models::EncoderOutput encoded = model.encode(src, src_lengths);
  std::unique_ptr<models::DecoderState> state = model.initial_state(encoded);
  // Every step multiplies a few rows by the same decoder weights: pack them once.
  const autograd::PackedWeightsScope packed_weights;
  const auto eos = static_cast<int32_t>(config.eos_id);

  std::vector<Sentence> sentences(src_lengths.size());
  for (size_t b = 0; b < sentences.size(); ++b) {
    Sentence& s = sentences[b];
    s.source_length = src_lengths[b];
    s.limit = max_target_length(options, s.source_length, config);
    s.width = options.beam_size;
    s.live.push_back({.row = int32_t(b)});  // the state's row b: source sentence b
  }
  const bool want_attention = options.keep_attention || options.coverage_penalty > 0;
  std::vector<float> prev(sentences.size(), static_cast<float>(config.bos_id));
  std::vector<int64_t> widths;                  // per live row: its sentence's width
  std::vector<std::vector<int32_t>> proposals;  // per live row: its top-k ids
  for (int64_t step = 0; !prev.empty(); ++step) {
    const Tensor ids = Tensor::from({int64_t(prev.size())}, prev);
    const models::StepOutput out = model.step(ids, *state, want_attention, options.attention);
    const Tensor lp = detail::as_f32(out.log_probs);
    const Tensor attention =
        want_attention && out.attention.defined() ? detail::as_f32(out.attention) : Tensor();
    // Each live row proposes its sentence's width best tokens.
    widths.assign(prev.size(), 0);
    for (const Sentence& s : sentences)
      for (const Live& l : s.live) widths[size_t(l.row)] = s.width;
    detail::top_k_rows(lp.data<float>(), lp.dim(1), widths, proposals);
    StepRows in{lp.data<float>(), lp.dim(1), &proposals};
    if (attention.defined()) {
      in.attention = attention.data<float>();
      in.attention_stride = attention.dim(1);
    }
    int64_t live = 0;
    for (Sentence& s : sentences) {
      if (s.live.empty()) continue;
      expand(s, in, step, eos);
      live += int64_t(s.live.size());
    }
    if (live == 0) break;
    const std::vector<int64_t> rows = place(sentences, live);  // each new row's old row
    std::vector<float> next_prev(rows.size());
    for (const Sentence& s : sentences)
      for (const Live& l : s.live)
        next_prev[size_t(l.row)] = static_cast<float>(s.nodes[size_t(l.node)].token);
    bool identity = rows.size() == prev.size();
    for (size_t i = 0; identity && i < rows.size(); ++i) identity = rows[i] == int64_t(i);
    if (!identity) state->reorder(rows);
    prev = std::move(next_prev);
  }

  std::vector<std::vector<Hypothesis>> out;
  out.reserve(sentences.size());
  for (const Sentence& s : sentences) out.push_back(best_of(s, eos, options));
  return out;
}

}  // namespace qkv::decode
